package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// smallDirEnv names a folder on a small volume. CI mounts an 8 MiB tmpfs
// into the Wine root, so Windows' own "disk full" (ERROR_DISK_FULL, from
// Wine's ENOSPC) is what bbolt meets when it grows the file.
const smallDirEnv = "RECEIPTD_SMALL_DIR"

// TestDiskFullWindows fills a small volume: the write that cannot grow the
// file is ErrDiskFull naming the file, the database stays consistent and
// keeps what was w.stored, and writes work again once there is room.
func TestDiskFullWindows(t *testing.T) {
	dir := os.Getenv(smallDirEnv)
	if dir == "" {
		t.Skipf("needs %s: a folder on a small volume (CI: an 8 MiB tmpfs under Wine)", smallDirEnv)
	}
	path := filepath.Join(dir, fmt.Sprintf("diskfull-%d.db", os.Getpid()))
	filler := path + ".filler"
	t.Cleanup(func() { _ = os.Remove(path); _ = os.Remove(filler) })
	// Room to give back later: without it a full volume stays full.
	require.NoError(t, os.WriteFile(filler, make([]byte, 2<<20), 0o600))
	opts := store.Options{InitialMmapSize: 1 << 20} // bbolt maps (and on Windows sizes) the file at open
	s, err := store.Open(path, opts)
	require.NoError(t, err)
	w := &fillWriter{s: s}
	for range 200 {
		if err = w.write(); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, store.ErrDiskFull)
	require.Contains(t, err.Error(), path)
	t.Logf("after %d writes: %v", w.stored, err)
	require.NoError(t, s.Check(), "a failed commit leaves the file consistent")
	require.ErrorIs(t, w.write(), store.ErrDiskFull, "still full, still not poisoned")

	require.NoError(t, os.Remove(filler))
	require.NoError(t, w.write(), "room again")
	require.NoError(t, s.Close())
	s, err = store.Open(path, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	n := 0
	require.NoError(t, s.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(testBucket).Stats().KeyN
		return nil
	}))
	require.Equal(t, w.stored, n, "every acknowledged write is there after reopening")
}
