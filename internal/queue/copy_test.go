package queue_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
)

// TestWriteCopyHoldsEveryAcknowledgedReceipt: a copy holds receipts still
// only in the write-ahead log, indexed and finished entries, and a
// delete; CheckCopy walks it and agrees with the count taken while it
// was written.
func TestWriteCopyHoldsEveryAcknowledgedReceipt(t *testing.T) {
	q, _ := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	for i := 1; i <= 5; i++ {
		enqueue(t, q, i)
	}
	claimOne(t, q, "Q000000000001")
	finish(t, q, "Q000000000001", queue.StateSent, &queue.Outcome{ID: "123456789012345678901234567890123"})
	_, _, err := q.RequestDelete(ctx, "UNKNOWN-1", "", t0)
	require.NoError(t, err)
	enqueue(t, q, 7) // in the log only, until the copy applies it

	var buf bytes.Buffer
	c, err := q.WriteCopy(ctx, &buf)
	require.NoError(t, err)
	require.Equal(t, 7, c.Entries)
	require.Equal(t, int64(buf.Len()), c.Bytes)

	path := filepath.Join(t.TempDir(), "copy.db")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	st, err := store.OpenReadOnly(path)
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Check())
	require.NoError(t, queue.CheckCopy(st, c.Entries))
	err = queue.CheckCopy(st, c.Entries+1)
	require.ErrorIs(t, err, store.ErrCorrupt, "a copy short of what was counted is refused")
	require.ErrorContains(t, err, "holds 7 entries, its counters say 7, and 8 were copied")
}

func TestWriteCopyStopsWithItsContext(t *testing.T) {
	q := newQueue(t)
	enqueue(t, q, 1)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := q.WriteCopy(cctx, &bytes.Buffer{})
	require.ErrorIs(t, err, context.Canceled)
}

// blockingWriter holds the first Write until release is closed, and
// reports through started that the copy is under way.
type blockingWriter struct {
	started, release chan struct{}
	once             sync.Once
	buf              bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.started)
		<-w.release
	})
	return w.buf.Write(p)
}

// TestACopyInProgressHoldsNoQueueLock: while a copy's read transaction is
// open and its writer stalled (a slow disk), enqueues, their commit into
// the file and claims all go on; the copy holds what was there when it
// began.
func TestACopyInProgressHoldsNoQueueLock(t *testing.T) {
	q, _ := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	for i := 1; i <= 3; i++ {
		enqueue(t, q, i)
	}
	w := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
	type result struct {
		c   queue.Copy
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := q.WriteCopy(ctx, w)
		done <- result{c, err}
	}()
	<-w.started

	others := make(chan error, 1)
	go func() {
		if _, _, err := q.Enqueue(ctx, receipt(4)); err != nil {
			others <- err
			return
		}
		if err := q.ApplyAll(ctx); err != nil {
			others <- err
			return
		}
		_, err := q.Claim(ctx, 1, t0.Add(24*time.Hour))
		others <- err
	}()
	select {
	case err := <-others:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		close(w.release)
		t.Fatal("an enqueue, its commit or a claim waited for the copy")
	}
	close(w.release)
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, 3, r.c.Entries, "the copy is the database as it was when it began")
}
