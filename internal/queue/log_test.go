package queue_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

// openLogged opens a queue with a write-ahead log at path+".wal", whatever
// withLog says, and no ApplyLoop: records stay unapplied until a write
// transaction or ApplyAll applies them.
func openLogged(t testing.TB, path string, segSize int64) (*queue.Queue, *store.Store) {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(ctx, st, queue.Options{LogDir: path + ".wal", LogSegmentSize: segSize,
		Now: func() time.Time { return t0.Add(time.Hour) }})
	require.NoError(t, err)
	return q, st
}

func closeLogged(t *testing.T, q *queue.Queue, st *store.Store) {
	t.Helper()
	require.NoError(t, q.Close(ctx))
	require.NoError(t, queue.CheckIndexes(st))
	storetest.CheckAndClose(t, st)
}

// Every read that must see an acknowledged receipt sees one still only in
// the log: the file holds none of them (no tail, no entries).
func TestReadsSeeReceiptsNotYetApplied(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	for i := 1; i <= 3; i++ {
		enqueue(t, q, i)
	}
	n, err := queue.TailLen(st)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is applied yet")

	e, err := q.Get("Q000000000002")
	require.NoError(t, err)
	require.Equal(t, "key-2", e.IdemKey)
	require.Equal(t, 3, counts(t, q)[queue.StateQueued])
	oldest, ok, err := q.OldestUnsent()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Second), oldest)
	ahead, err := q.ClaimableAhead("Q000000000003", t0.Add(time.Hour), 10)
	require.NoError(t, err)
	require.Equal(t, 2, ahead)
	page, next, err := q.List(queue.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000001", "Q000000000002"}, ids(page))
	page, next, err = q.List(queue.ListOptions{State: queue.StateQueued, Limit: 2, After: next})
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000003"}, ids(page))
	require.Empty(t, next)
	latest, err := q.Latest(queue.StateQueued, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000003", "Q000000000002"}, ids(latest))

	// Idempotency: the same body replays the record, another conflicts.
	e, replayed, err := q.Enqueue(ctx, receipt(2))
	require.NoError(t, err)
	require.True(t, replayed)
	require.Equal(t, "Q000000000002", e.QueueID)
	other := receipt(2)
	other.BodyHash = "another"
	_, _, err = q.Enqueue(ctx, other)
	require.ErrorIs(t, err, queue.ErrConflict)

	// A claim applies what it needs first.
	claimOne(t, q, "Q000000000001")
	require.Equal(t, 3, fileEntries(t, st), "the claim applied every record")
	closeLogged(t, q, st)
}

// Records a kill left unapplied are applied at the next open, once: a
// third open finds nothing more to apply.
func TestReplayAtOpenIsIdempotent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	enqueue(t, q, 1)
	require.NoError(t, q.ApplyAll(ctx))
	enqueue(t, q, 2)
	enqueue(t, q, 3)
	require.Equal(t, 1, fileEntries(t, st))
	require.NoError(t, queue.Abandon(q))
	require.NoError(t, st.Close())

	for round, want := range []int{3, 4} {
		q, st = openLogged(t, path, 0)
		require.Equal(t, want, fileEntries(t, st), "round %d: each record applied once", round)
		require.Equal(t, want, counts(t, q)[queue.StateQueued])
		require.Equal(t, queue.FormatID(uint64(want+1)), enqueue(t, q, want+1).QueueID, "round %d: queueIds go on", round)
		require.NoError(t, queue.Abandon(q))
		require.NoError(t, queue.CheckIndexes(st))
		require.NoError(t, st.Close())
	}
	q, st = openLogged(t, path, 0)
	require.Equal(t, 5, fileEntries(t, st))
	closeLogged(t, q, st)
}

func fileEntries(t *testing.T, st *store.Store) int {
	t.Helper()
	n, err := queue.FileEntries(st)
	require.NoError(t, err)
	return n
}

// A delete request of a receipt still only in the log cancels it, and the
// queueIds of the delete and of later receipts follow on.
func TestDeleteOfAReceiptNotYetApplied(t *testing.T) {
	t.Parallel()
	q, st := openLogged(t, filepath.Join(t.TempDir(), "receiptd.db"), 0)
	enqueue(t, q, 1)
	enqueue(t, q, 2)
	e, action, err := q.RequestDelete(ctx, "Q000000000002", "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteCancelled, action)
	require.Equal(t, queue.StateCancelled, e.State)
	d, action, err := q.RequestDelete(ctx, "UNKNOWN-1", "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action)
	require.Equal(t, "Q000000000003", d.QueueID)
	require.Equal(t, "Q000000000004", enqueue(t, q, 4).QueueID)
	closeLogged(t, q, st)
}

// A receipt too large for a segment is enqueued through a commit of the
// file instead, in its place in the sequence.
func TestReceiptLargerThanASegment(t *testing.T) {
	t.Parallel()
	q, st := openLogged(t, filepath.Join(t.TempDir(), "receiptd.db"), 4<<10)
	enqueue(t, q, 1)
	big := receipt(2)
	big.Body = []byte(`{"note":"` + strings.Repeat("x", 5<<10) + `"}`)
	e, _, err := q.Enqueue(ctx, big)
	require.NoError(t, err)
	require.Equal(t, "Q000000000002", e.QueueID)
	require.Equal(t, "Q000000000003", enqueue(t, q, 3).QueueID)
	got, err := q.Get("Q000000000002")
	require.NoError(t, err)
	require.Equal(t, big.Body, []byte(got.Body))
	closeLogged(t, q, st)
}

// A log directory that is gone while the database says records may wait
// in it is refused, naming it; after a clean stop it may go.
func TestMissingLogIsRefusedUnlessStoppedCleanly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	enqueue(t, q, 1)
	require.NoError(t, queue.Abandon(q))
	require.NoError(t, st.Close())
	require.NoError(t, os.Rename(path+".wal", path+".wal.away"))

	st, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	_, err = queue.Open(ctx, st, queue.Options{LogDir: path + ".wal"})
	require.ErrorIs(t, err, store.ErrCorrupt)
	require.ErrorContains(t, err, path+".wal")
	require.NoError(t, st.Close())

	require.NoError(t, os.RemoveAll(path+".wal"))
	require.NoError(t, os.Rename(path+".wal.away", path+".wal"))
	q, st = openLogged(t, path, 0)
	require.Equal(t, 1, counts(t, q)[queue.StateQueued], "put back, it is replayed")
	require.NoError(t, q.Close(ctx))
	require.NoError(t, st.Close())

	require.NoError(t, os.RemoveAll(path+".wal"))
	q, st = openLogged(t, path, 0)
	require.Equal(t, 1, counts(t, q)[queue.StateQueued], "after a clean stop the log held nothing")
	closeLogged(t, q, st)
}

// A closed queue refuses enqueues as the store would.
func TestEnqueueAfterClose(t *testing.T) {
	t.Parallel()
	q, st := openLogged(t, filepath.Join(t.TempDir(), "receiptd.db"), 0)
	require.NoError(t, q.Close(ctx))
	_, _, err := q.Enqueue(ctx, receipt(1))
	require.True(t, errors.Is(err, store.ErrClosed), "%v", err)
	storetest.CheckAndClose(t, st)
}

// TestApplyLoopAppliesAFullBatchAtOnce: once ApplySoon records wait,
// ApplyLoop applies them without waiting out ApplyDelay (an hour here), so
// a till that is never quiet still has its log applied and trimmed, and
// the records it holds in memory stay bounded. Twice
// ApplySoon are posted: the loop may take the first few early (it may
// start after the first record's wake-up), and then ApplySoon more wait.
func TestApplyLoopAppliesAFullBatchAtOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	st, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(ctx, st, queue.Options{LogDir: path + ".wal", ApplyDelay: time.Hour,
		Now: func() time.Time { return t0.Add(time.Hour) }})
	require.NoError(t, err)
	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.ApplyLoop(loopCtx) }()
	for i := 1; i <= 2*queue.ApplySoon; i++ {
		enqueue(t, q, i)
	}
	require.Eventually(t, func() bool { return fileEntries(t, st) >= queue.ApplySoon }, 30*time.Second, 10*time.Millisecond,
		"a full batch reaches the file without waiting out ApplyDelay")
	stop()
	require.NoError(t, <-done)
	closeLogged(t, q, st)
}

// TestApplyLoopWaitsForAQuietTill: while receipts follow each other more
// closely than ApplyDelay, ApplyLoop makes no commit (each commit
// fdatasyncs the file, on the disk a sale's own flush waits for); once
// they stop it applies every one of them, those that arrived while it
// waited included. The loop of before, one commit an ApplyDelay after a
// batch's first record, made one every ApplyDelay here.
func TestApplyLoopWaitsForAQuietTill(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	var commits atomic.Int64
	st, err := store.Open(path, store.Options{OnCommit: func(time.Duration, int) { commits.Add(1) }})
	require.NoError(t, err)
	const delay = 200 * time.Millisecond
	q, err := queue.Open(ctx, st, queue.Options{LogDir: path + ".wal", ApplyDelay: delay,
		Now: func() time.Time { return t0.Add(time.Hour) }})
	require.NoError(t, err)
	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.ApplyLoop(loopCtx) }()
	before, start := commits.Load(), time.Now()
	n := 0
	for time.Since(start) < 6*delay {
		n++
		enqueue(t, q, n)
		time.Sleep(2 * time.Millisecond)
	}
	during := commits.Load() - before
	t.Logf("%d receipts over %s: %d commits", n, time.Since(start).Round(time.Millisecond), during)
	require.LessOrEqual(t, during, int64(2), "no commit while receipts keep coming (two for a pause of the test's own)")
	require.Eventually(t, func() bool { return fileEntries(t, st) == n }, 10*time.Second, 10*time.Millisecond,
		"every record reaches the file once the till is quiet")
	stop()
	require.NoError(t, <-done)
	closeLogged(t, q, st)
}

// An enqueue with the log reads the file only for a key the filter may
// hold (keyfilter.go): keys of the file at Open and keys applied since
// are found there, so their receipts are replayed or refused, never
// taken again.
func TestKeysInTheFileAreFoundWithoutAReadForNewKeys(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	first := enqueue(t, q, 1)
	closeLogged(t, q, st) // applied: key-1 is in the file only

	q, st = openLogged(t, path, 0)
	e, replayed, err := q.Enqueue(ctx, receipt(1))
	require.NoError(t, err)
	require.True(t, replayed, "a key of the file at Open")
	require.Equal(t, first.QueueID, e.QueueID)
	other := receipt(1)
	other.BodyHash = "another body"
	_, _, err = q.Enqueue(ctx, other)
	require.ErrorIs(t, err, queue.ErrConflict)

	second := enqueue(t, q, 2)
	require.NoError(t, q.ApplyAll(ctx)) // key-2 leaves the overlay for the file
	e, replayed, err = q.Enqueue(ctx, receipt(2))
	require.NoError(t, err)
	require.True(t, replayed, "a key applied since Open")
	require.Equal(t, second.QueueID, e.QueueID)
	require.Equal(t, queue.FormatID(3), enqueue(t, q, 3).QueueID, "a new key is new")
	closeLogged(t, q, st)
}

// A log record whose key already has a row in the file is refused as
// damage, not applied over it: here the file's mark of the records applied
// (and its entries' sequence) was wound back, so that the log's first
// record is applied again at Open.
func TestARecordWhoseKeyHasARowIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	enqueue(t, q, 1)
	require.NoError(t, q.ApplyAll(ctx))
	require.NoError(t, queue.Abandon(q))
	require.NoError(t, st.Update(ctx, func(tx *bbolt.Tx) error {
		root := tx.Bucket(store.BucketQueue)
		if err := root.Bucket([]byte("entries")).SetSequence(0); err != nil {
			return err
		}
		return root.Put([]byte("logApplied"), binary.BigEndian.AppendUint64(nil, 0))
	}))
	_, err := queue.Open(ctx, st, queue.Options{LogDir: path + ".wal"})
	require.ErrorIs(t, err, store.ErrCorrupt)
	require.ErrorContains(t, err, `idempotency key "key-1" already has a row`)
	require.NoError(t, st.Close())
}
