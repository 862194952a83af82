package queue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
)

// TestEntriesPagesAreFilled: receipts enqueued one after the other, then
// sent (each record grows by its attempt and outcome), fill the entries
// bucket's leaf pages, and no page overflows. At bbolt's default split
// (half) each page, never written again, kept 2 queued receipts (42%);
// at 0.9 it kept 4, whose node bbolt may not split once they grow (it
// never splits a node of 4 keys or fewer), so it overflowed into two
// pages: half the year's leaf pages, 55% full.
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
	stats := func() bbolt.BucketStats {
		var s bbolt.BucketStats
		require.NoError(t, st.View(func(tx *bbolt.Tx) error {
			s = tx.Bucket(store.BucketQueue).Bucket([]byte("entries")).Stats()
			return nil
		}))
		require.Equal(t, n, s.KeyN)
		return s
	}
	check := func(stage string, s bbolt.BucketStats, min float64) {
		fill := float64(s.LeafInuse) / float64(s.LeafAlloc)
		t.Logf("entries %s: %d leaf pages (%d overflow) for %d receipts, %.0f%% in use", stage, s.LeafPageN, s.LeafOverflowN, n, 100*fill)
		require.Zero(t, s.LeafOverflowN, stage+": overflow pages")
		require.Greater(t, fill, min, fmt.Sprintf("%s: leaf pages %.0f%% full", stage, 100*fill))
	}
	check("queued", stats(), 0.55)
	// Sent as the syncer sends: claimed in batches, each finished with an
	// attempt and the tax service's answer as kept (no lottery, no qrData).
	for sent := 0; sent < n; {
		got, err := q.Claim(ctx, 32, t0.Add(24*time.Hour))
		require.NoError(t, err)
		require.NotEmpty(t, got)
		for _, e := range got {
			_, err := q.Finish(ctx, queue.Finishing{QueueID: e.QueueID,
				Attempt: queue.Attempt{At: t0, Duration: 41 * time.Millisecond, Result: queue.ResultSuccess, HTTPStatus: 200},
				Next:    queue.StateSent,
				Outcome: &queue.Outcome{Status: "SUCCESS", ID: fmt.Sprintf("0370%029d", sent), Date: "2026-11-26 20:31:34",
					PosID: "10001234", HTTPStatus: 200}})
			require.NoError(t, err)
			sent++
		}
	}
	check("sent", stats(), 0.75)
}
