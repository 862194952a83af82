package store_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

func TestOnCommitIsToldOfEveryCommit(t *testing.T) {
	t.Parallel()
	var commits, updates atomic.Int64
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{OnCommit: func(d time.Duration, n int) {
		// Zero is possible: Windows' clock may not tick during a commit.
		require.GreaterOrEqual(t, d, time.Duration(0))
		commits.Add(1)
		updates.Add(int64(n))
	}})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	before := commits.Load() // Open may commit its schema
	for range 3 {
		require.NoError(t, st.Update(context.Background(), func(tx *bbolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists([]byte("x"))
			return err
		}))
	}
	require.EqualValues(t, before+3, commits.Load())
	require.EqualValues(t, before+3, updates.Load())
	require.EqualValues(t, st.Stats().Commits, commits.Load())
}
