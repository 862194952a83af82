//go:build linux

package store_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

const diskFullEnv = "RECEIPTD_STORE_DISKFULL_DB"

// TestDiskFull runs TestDiskFullChild in a subprocess whose file size limit
// (RLIMIT_FSIZE) is lowered, so growing the database fails with EFBIG, the
// same path as ENOSPC, without root or a tiny filesystem.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	path, stored := storetest.RunDiskFullChild(t, "TestDiskFullChild", diskFullEnv, "DISKFULL-RESULT stored")
	require.Positive(t, stored)

	// A fresh process sees exactly what was acknowledged, and a clean file.
	s := storetest.OpenPath(t, path)
	require.NoError(t, s.Check())
	require.Equal(t, stored, countKeys(t, s))
	put(t, s, "after-restart", "ok")
}

func TestDiskFullChild(t *testing.T) {
	path := storetest.ChildValue(t, diskFullEnv)
	s, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	w := &fillWriter{s: s}
	require.NoError(t, w.write())

	lift := storetest.LimitFileGrowth(t, path, 4<<20)

	for range 1000 {
		if err = w.write(); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, store.ErrDiskFull)
	require.Contains(t, err.Error(), path)
	t.Logf("first refusal: %v", err)
	require.NoError(t, s.Check(), "a failed commit leaves the file consistent")
	require.ErrorIs(t, w.write(), store.ErrDiskFull, "still full, still not poisoned")
	require.Equal(t, w.stored, countKeys(t, s))
	h := s.Health()
	require.Contains(t, h.DiskFull, "disk full", "Health reports the full disk")
	require.False(t, h.DiskFullSince.IsZero())
	require.Empty(t, h.Failed, "a full disk does not poison the store")

	lift()
	require.NoError(t, w.write(), "space is back")
	require.Empty(t, s.Health().DiskFull, "a commit that succeeds clears the disk-full report")
	require.NoError(t, s.Check())
	require.NoError(t, s.Close())
	fmt.Printf("DISKFULL-RESULT stored=%d\n", w.stored)
}

func countKeys(t *testing.T, s *store.Store) int {
	t.Helper()
	n := 0
	require.NoError(t, s.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(testBucket); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	}))
	return n
}
