package queue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

var (
	ctx = context.Background()
	t0  = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
)

// withLog makes openQueue open queues with a write-ahead log beside the
// database, as the daemon does; RECEIPTD_QUEUE_NOLOG=1 runs the tests on
// the path without one (each enqueue its own commit).
var withLog = os.Getenv("RECEIPTD_QUEUE_NOLOG") == ""

func openQueue(t *testing.T, path string) (*queue.Queue, *store.Store) {
	t.Helper()
	st := storetest.OpenPath(t, path)
	opts := queue.Options{Now: func() time.Time { return t0.Add(time.Hour) }}
	if withLog {
		opts.LogDir = path + ".wal"
	}
	q, err := queue.Open(ctx, st, opts)
	require.NoError(t, err)
	// Runs before storetest's own cleanup closes the store.
	t.Cleanup(func() {
		if !st.Closed() {
			require.NoError(t, q.Close(ctx))
			require.NoError(t, queue.CheckIndexes(st), "indexes agree with the entries")
		}
	})
	return q, st
}

// crash leaves q and its store as a kill would: the log closed unapplied,
// the store closed, so the next openQueue is a restart.
func crash(t *testing.T, q *queue.Queue, st *store.Store) {
	t.Helper()
	require.NoError(t, queue.Abandon(q))
	require.NoError(t, st.Close())
}

func newQueue(t *testing.T) *queue.Queue {
	t.Helper()
	q, _ := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	return q
}

func receipt(n int) queue.NewReceipt {
	return queue.NewReceipt{
		IdemKey: fmt.Sprintf("key-%d", n), BodyHash: fmt.Sprintf("hash-%d", n),
		Body:        []byte(fmt.Sprintf(`{ "billIdSuffix": "%d", "totalAmount": 1000.10 }`, n)),
		MerchantTin: "123", PosNo: "1", BillIDSuffix: fmt.Sprint(n), Now: t0.Add(time.Duration(n) * time.Second),
	}
}

func enqueue(t *testing.T, q *queue.Queue, n int) queue.Entry {
	t.Helper()
	e, replayed, err := q.Enqueue(ctx, receipt(n))
	require.NoError(t, err)
	require.False(t, replayed)
	return e
}

func claimOne(t *testing.T, q *queue.Queue, want string) queue.Entry {
	t.Helper()
	got, err := q.Claim(ctx, 1, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, want, got[0].QueueID)
	require.Equal(t, queue.StateSending, got[0].State)
	return got[0]
}

func finish(t *testing.T, q *queue.Queue, id string, next queue.State, o *queue.Outcome) queue.Entry {
	t.Helper()
	e, err := q.Finish(ctx, queue.Finishing{QueueID: id, Attempt: queue.Attempt{At: t0, Duration: time.Second, Result: queue.ResultSuccess}, Next: next, Outcome: o, NextAttemptAt: time.Time{}})
	require.NoError(t, err)
	require.Equal(t, next, e.State)
	return e
}

func counts(t *testing.T, q *queue.Queue) map[queue.State]int {
	t.Helper()
	c, err := q.Counts()
	require.NoError(t, err)
	return c
}

func TestEnqueueFIFOIdempotencyAndRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openQueue(t, path)
	a, b := enqueue(t, q, 1), enqueue(t, q, 2)
	require.Equal(t, "Q000000000001", a.QueueID)
	require.Equal(t, "Q000000000002", b.QueueID)
	require.Equal(t, receipt(1).Body, []byte(a.Body), "the POS bytes are kept exactly")

	again, replayed, err := q.Enqueue(ctx, receipt(1))
	require.NoError(t, err)
	require.True(t, replayed)
	require.Equal(t, a.QueueID, again.QueueID)

	other := receipt(1)
	other.BodyHash = "different"
	_, _, err = q.Enqueue(ctx, other)
	require.ErrorIs(t, err, queue.ErrConflict)

	bad := receipt(3)
	bad.Body = []byte(`{"unterminated"`)
	_, _, err = q.Enqueue(ctx, bad)
	require.ErrorIs(t, err, queue.ErrInvalid)
	require.Equal(t, 2, counts(t, q)[queue.StateQueued], "nothing stored on conflict or error")

	crash(t, q, st)
	q2, _ := openQueue(t, path)
	again, replayed, err = q2.Enqueue(ctx, receipt(2))
	require.NoError(t, err)
	require.True(t, replayed, "idempotency keys survive a restart")
	require.Equal(t, b.QueueID, again.QueueID)
	_, _, err = q2.Enqueue(ctx, other)
	require.ErrorIs(t, err, queue.ErrConflict)
	got, err := q2.Get(a.QueueID)
	require.NoError(t, err)
	require.Equal(t, a.Body, got.Body)
	require.Equal(t, t0.Add(time.Second), got.AcceptedAt)
	require.Equal(t, 3, enqueueID(t, q2, 3))
}

func enqueueID(t *testing.T, q *queue.Queue, n int) int {
	seq, ok := queue.ParseID(enqueue(t, q, n).QueueID)
	require.True(t, ok)
	return int(seq)
}

func TestGetUnknown(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	for _, id := range []string{"Q000000000001", "nonsense", ""} {
		_, err := q.Get(id)
		require.ErrorIs(t, err, queue.ErrNotFound, id)
	}
}

func TestClaimOrderLimitAndBackoff(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	for i := 1; i <= 5; i++ {
		enqueue(t, q, i)
	}
	now := t0.Add(time.Hour) // the queue's own clock (openQueue)
	got, err := q.Claim(ctx, 2, now)
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000001", "Q000000000002"}, []string{got[0].QueueID, got[1].QueueID})

	retryAt := now.Add(time.Minute)
	_, err = q.Finish(ctx, queue.Finishing{QueueID: got[0].QueueID, Attempt: queue.Attempt{At: now, Result: queue.ResultTransient, Error: "503"}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: retryAt})

	require.NoError(t, err)

	got, err = q.Claim(ctx, 10, now)
	require.NoError(t, err)
	require.Len(t, got, 3, "entry 1 waits for its backoff")
	require.Equal(t, "Q000000000003", got[0].QueueID)

	got, err = q.Claim(ctx, 10, retryAt)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "Q000000000001", got[0].QueueID)
	require.Len(t, got[0].Attempts, 1)
	require.Equal(t, 5, counts(t, q)[queue.StateSending])
}

func TestRecoveryPutsSendingBackAsAmbiguous(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openQueue(t, path)
	r := enqueue(t, q, 1)
	enqueue(t, q, 2)
	claimOne(t, q, r.QueueID)
	finish(t, q, r.QueueID, queue.StateSent, &queue.Outcome{Status: "SUCCESS", ID: "U1", Date: "2025-03-01 17:00:00"})
	d, _, err := q.RequestDelete(ctx, r.QueueID, "", t0)
	require.NoError(t, err)
	got, err := q.Claim(ctx, 2, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, got, 2) // receipt 2 and the delete
	crash(t, q, st)

	q2, _ := openQueue(t, path)
	require.Equal(t, 2, q2.Recovered())
	select {
	case <-q2.Notify():
	default:
		t.Fatal("recovered work must wake the worker")
	}
	e, err := q2.Get("Q000000000002")
	require.NoError(t, err)
	require.Equal(t, queue.StateQueued, e.State)
	require.Equal(t, 1, e.Ambiguous)
	require.Equal(t, queue.ResultInterrupted, e.Attempts[0].Result)
	e, err = q2.Get(d.QueueID)
	require.NoError(t, err)
	require.Equal(t, queue.StateDeleteQueued, e.State)
	c := counts(t, q2)
	require.Equal(t, 0, c[queue.StateSending])
	require.Equal(t, 1, c[queue.StateQueued])
	require.Equal(t, 1, c[queue.StateDeleteQueued])
}

func TestAttemptHistoryIsBounded(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t)
	q, err := queue.Open(ctx, st, queue.Options{MaxAttempts: 3})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, queue.CheckIndexes(st)) })
	e := enqueue(t, q, 1)
	for i := range 5 {
		claimOne(t, q, e.QueueID)
		e, err = q.Finish(ctx, queue.Finishing{QueueID: e.QueueID, Attempt: queue.Attempt{At: t0.Add(time.Duration(i) * time.Minute),
			Result: queue.ResultTransient, Error: fmt.Sprint("try ", i)}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: time.Time{}})

		require.NoError(t, err)
	}
	require.Len(t, e.Attempts, 3)
	require.Equal(t, 2, e.AttemptsDropped)
	require.Equal(t, "try 0", e.Attempts[0].Error, "the first attempt is kept")
	require.Equal(t, "try 4", e.Attempts[2].Error)
}

// A backoff set at one time and read after the clock was put back (a
// till's clock corrected after start-up) would last as long as the
// correction; the entry is due at once instead.
func TestBackoffDoesNotOutlastAClockPutBack(t *testing.T) {
	t.Parallel()
	q := newQueue(t) // its clock: t0+1h
	id := enqueue(t, q, 1).QueueID
	now := t0.Add(time.Hour)
	claimOne(t, q, id)
	_, err := q.Finish(ctx, queue.Finishing{QueueID: id, Attempt: queue.Attempt{At: now, Result: queue.ResultTransient}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: now.Add(10 * time.Second)})
	require.NoError(t, err)

	got, err := q.Claim(ctx, 1, now.Add(5*time.Second))
	require.NoError(t, err)
	require.Empty(t, got, "still backing off")
	// A claim that read its clock a moment before the finish committed (it
	// waited behind it in a group commit) is no clock put back.
	got, err = q.Claim(ctx, 1, now.Add(-time.Millisecond))
	require.NoError(t, err)
	require.Empty(t, got, "a moment earlier is not a clock put back")
	n, err := q.ClaimableAhead("Q000000000002", now.Add(5*time.Second), 10)
	require.NoError(t, err)
	require.Zero(t, n)

	back := now.Add(-2 * time.Hour) // the clock was put back two hours
	n, err = q.ClaimableAhead("Q000000000002", back, 10)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, err = q.Claim(ctx, 1, back)
	require.NoError(t, err)
	require.Len(t, got, 1, "due at once, not in two hours")
}

// TestRecoveryHoldsAtMaxAmbiguous: each restart that finds a receipt in
// sending counts an ambiguous attempt; the one that reaches
// MaxAmbiguous (3 by default) holds it instead of queueing it again, so
// a daemon that crashes mid-send again and again cannot issue one sale
// again and again.
func TestRecoveryHoldsAtMaxAmbiguous(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openQueue(t, path)
	r := enqueue(t, q, 1)
	for round := 1; round <= 3; round++ {
		claimOne(t, q, r.QueueID)
		crash(t, q, st) // mid-send
		q, st = openQueue(t, path)
		e, err := q.Get(r.QueueID)
		require.NoError(t, err)
		require.Equal(t, round, e.Ambiguous)
		if round < 3 {
			require.Equal(t, queue.StateQueued, e.State, "round %d", round)
			continue
		}
		require.Equal(t, queue.StateHeld, e.State)
		require.Contains(t, e.Outcome.Message, "held after 3 ambiguous attempts")
	}
	got, err := q.Claim(ctx, 1, t0.Add(48*time.Hour))
	require.NoError(t, err)
	require.Empty(t, got, "a held receipt is not sent")
}
