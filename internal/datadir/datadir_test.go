package datadir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// The data directories these tests change are made by the real store and
// queue, as the daemon makes them, in t.TempDir().

// dataDirWith is a data directory holding n queued receipts, every one
// applied to the database (the queue closed, as receiptd stop leaves it).
func dataDirWith(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	st, err := store.OpenDir(dir, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(context.Background(), st, queue.Options{LogDir: layout.WAL(dir)})
	require.NoError(t, err)
	enqueue(t, q, 1, n)
	require.NoError(t, q.Close(context.Background()))
	require.NoError(t, st.Close())
	return dir
}

// crashedDataDir is a data directory holding applied receipts and more
// only in the write-ahead log, as a kill -9 leaves it: a copy taken while
// the queue was open.
func crashedDataDir(t *testing.T, applied, logged int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "data")
	st, err := store.OpenDir(src, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(context.Background(), st, queue.Options{LogDir: layout.WAL(src)})
	require.NoError(t, err)
	enqueue(t, q, 1, applied)
	require.NoError(t, q.ApplyAll(context.Background()))
	enqueue(t, q, applied+1, applied+logged)
	dst := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	require.NoError(t, q.Close(context.Background()))
	require.NoError(t, st.Close())
	return dst
}

// enqueue queues sample receipts from to to (bill suffixes and keys k<i>).
func enqueue(t *testing.T, q *queue.Queue, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		body := sim.SampleReceipt("POS-1", fmt.Sprintf("%06d", i))
		_, _, err := q.Enqueue(context.Background(), queue.NewReceipt{IdemKey: fmt.Sprintf("k%d", i), Body: body,
			BodyHash: receipt.Fingerprint(body)})
		require.NoError(t, err)
	}
}

// configFor is the config of data directory dir, listening where nothing
// answers, so only the database's lock tells a running receiptd.
func configFor(t *testing.T, dir string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen = dir, testkit.ClosedAddr(t)
	return cfg
}

// openAsDaemon opens dir's database and write-ahead log as the daemon
// does (the marker checked, the log replayed); both close at cleanup.
func openAsDaemon(t *testing.T, dir string) (*store.Store, *queue.Queue) {
	t.Helper()
	st, err := store.OpenDir(dir, store.Options{})
	require.NoError(t, err, "the data directory opens as the daemon opens it")
	q, err := queue.Open(context.Background(), st, queue.Options{LogDir: layout.WAL(dir)})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, q.Close(context.Background()))
		require.NoError(t, st.Close())
	})
	return st, q
}

// openFile opens the stopped database at path without its data
// directory's marker or log; it closes at cleanup.
func openFile(t *testing.T, path string) (*store.Store, *queue.Queue) {
	t.Helper()
	st, err := store.Open(path, store.Options{Existing: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	q, err := queue.Open(context.Background(), st, queue.Options{})
	require.NoError(t, err)
	return st, q
}

// fileID is the identity of the stopped database at path.
func fileID(t *testing.T, path string) string {
	t.Helper()
	st, err := store.Open(path, store.Options{Existing: true})
	require.NoError(t, err)
	defer st.Close()
	id, err := st.ID()
	require.NoError(t, err)
	return id
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o600))
}

// glob is filepath.Glob that fails the test on a bad pattern.
func glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	return m
}
