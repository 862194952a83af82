//go:build linux

package queue_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/powercut"
)

// A write-ahead log whose flush fails (its disk stops answering: a power
// cut on the power-cut file system) fails the store: the enqueue is
// refused, and so is every later one, replays included, and the store
// says why, as after a failed commit.
func TestFailedLogFlushStopsEveryAcknowledgement(t *testing.T) {
	powercut.Need(t)
	disk, mnt := powercut.NewDisk(), t.TempDir()
	m, err := powercut.Mount(disk, mnt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Unmount() })
	path := filepath.Join(t.TempDir(), "receiptd.db") // the database on a working disk
	st, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	q, err := queue.Open(ctx, st, queue.Options{LogDir: filepath.Join(mnt, "wal")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = queue.Abandon(q) })
	enqueue(t, q, 1)

	disk.PowerOff()
	_, _, err = q.Enqueue(ctx, receipt(2))
	require.ErrorIs(t, err, store.ErrFailed)
	require.ErrorIs(t, st.Err(), store.ErrFailed, "the store refuses every write from now on")
	require.Contains(t, st.Health().Failed, "write-ahead log")
	_, _, err = q.Enqueue(ctx, receipt(1))
	require.ErrorIs(t, err, store.ErrFailed, "a replay is refused too")
}
