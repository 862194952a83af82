package queue_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// TestEntriesPagesAreFilled: receipts enqueued one after the other fill
// the entries bucket's leaf pages (3 of these receipts a page, 77% in use)
// where bbolt's default split at half leaves each page, never written
// again, with 2 (42%).
func TestEntriesPagesAreFilled(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, t.TempDir()+"/receiptd.db")
	const n, writers = 600, 16
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				r := receipt(i)
				r.Body = benchBody // a typical 600-byte receipt
				if _, _, err := q.Enqueue(ctx, r); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
	require.NoError(t, q.ApplyAll(ctx))
	var s bbolt.BucketStats
	require.NoError(t, st.View(func(tx *bbolt.Tx) error {
		s = tx.Bucket(store.BucketQueue).Bucket([]byte("entries")).Stats()
		return nil
	}))
	require.Equal(t, n, s.KeyN)
	fill := float64(s.LeafInuse) / float64(s.LeafAlloc)
	t.Logf("entries: %d leaf pages for %d receipts, %.0f%% in use", s.LeafPageN, n, 100*fill)
	require.Greater(t, fill, 0.7, fmt.Sprintf("leaf pages %.0f%% full", 100*fill))
}
