package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

// other is receipt(n) with a different body under the same key.
func other(n int) queue.NewReceipt {
	r := receipt(n)
	r.Body = []byte(`{"billIdSuffix":"corrected"}`)
	r.BodyHash = "corrected"
	return r
}

// Another body under a key is a conflict unless the first entry never
// became a sale: rejected or cancelled, with no attempt whose answer was
// lost. Then it is a correction and takes the key.
func TestAnotherBodyUnderAKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		state     queue.State
		ambiguous bool
		paid      bool // issued as PAYMENT first, then retried by an operator
		corrected bool
	}{
		{"queued", queue.StateQueued, false, false, false},
		{"sending", queue.StateSending, false, false, false},
		{"sent", queue.StateSent, false, false, false},
		{"payment", queue.StatePayment, false, false, false},
		{"held", queue.StateHeld, false, false, false},
		{"rejected", queue.StateRejected, false, false, true},
		{"cancelled", queue.StateCancelled, false, false, true},
		{"rejected after an ambiguous attempt", queue.StateRejected, true, false, false},
		{"rejected after it was issued as PAYMENT", queue.StateRejected, false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := newQueue(t)
			var id string
			if c.state == queue.StateRejected {
				id = enqueue(t, q, 1).QueueID
				if c.ambiguous {
					claimOne(t, q, id)
					_, err := q.Finish(ctx, queue.Finishing{QueueID: id, Attempt: queue.Attempt{At: t0, Result: queue.ResultAmbiguous}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: time.Time{}})
					require.NoError(t, err)
				}
				if c.paid {
					claimOne(t, q, id)
					finish(t, q, id, queue.StatePayment, &queue.Outcome{Status: "PAYMENT", ID: "U1"})
					_, err := q.Retry(ctx, id, true)
					require.NoError(t, err)
				}
				claimOne(t, q, id)
				_, err := q.Finish(ctx, queue.Finishing{QueueID: id, Attempt: queue.Attempt{At: t0, Result: queue.ResultRejected}, Next: c.state, Outcome: &queue.Outcome{Status: "ERROR", Message: "bad"}, NextAttemptAt: time.Time{}})

				require.NoError(t, err)
			} else {
				id = reach(t, q, 1, c.state)
			}
			e, replayed, err := q.Enqueue(ctx, other(1))
			if !c.corrected {
				require.ErrorIs(t, err, queue.ErrConflict)
				require.ErrorContains(t, err, id)
				return
			}
			require.NoError(t, err)
			require.False(t, replayed)
			require.NotEqual(t, id, e.QueueID)
			first, err := q.Get(id)
			require.NoError(t, err)
			require.Equal(t, queue.StateCancelled, first.State)
			if c.state == queue.StateRejected {
				require.Contains(t, first.Outcome.Message, "superseded by "+e.QueueID)
				require.Contains(t, first.Outcome.Message, "bad", "the tax service's reason is kept")
			}
			again, replayed, err := q.Enqueue(ctx, other(1))
			require.NoError(t, err)
			require.True(t, replayed)
			require.Equal(t, e.QueueID, again.QueueID, "the key now names the correction")
			_, _, err = q.Enqueue(ctx, receipt(1))
			require.ErrorIs(t, err, queue.ErrConflict, "the first body is now the other one")
		})
	}
}

// EarlierKey: the same body under the previous day's key, accepted since
// EarlierSince, is this request; an older one or another body is not, and
// today's key stays free.
func TestEarlierKey(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	first := enqueue(t, q, 1) // accepted at t0+1s under key-1
	same := func(key string, since time.Time) queue.NewReceipt {
		r := receipt(1)
		r.IdemKey, r.EarlierKey, r.EarlierSince = key, "key-1", since
		return r
	}
	e, replayed, err := q.Enqueue(ctx, same("key-2", t0.Add(2*time.Second)))
	require.NoError(t, err)
	require.False(t, replayed, "key-1 was accepted before the grace began")
	require.NotEqual(t, first.QueueID, e.QueueID)

	for range 2 {
		e, replayed, err = q.Enqueue(ctx, same("key-3", t0))
		require.NoError(t, err)
		require.True(t, replayed, "every retry within the grace")
		require.Equal(t, first.QueueID, e.QueueID)
	}
	o := other(3)
	_, replayed, err = q.Enqueue(ctx, o)
	require.NoError(t, err, "today's key stays free for today's own sale of that number")
	require.False(t, replayed)

	o = other(4)
	o.EarlierKey, o.EarlierSince = "key-1", t0
	_, replayed, err = q.Enqueue(ctx, o)
	require.NoError(t, err, "another body under the earlier key is no conflict")
	require.False(t, replayed)
}

// A retry of yesterday's last sale replays it even when today's key is
// already held by today's own sale of that number (here a rejected one,
// which another body could otherwise correct).
func TestEarlierKeyComesBeforeTodaysHolder(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	yesterday := enqueue(t, q, 1) // key-1, body 1
	today := other(2)
	today.IdemKey = "key-today"
	b, _, err := q.Enqueue(ctx, today)
	require.NoError(t, err)
	claimOne(t, q, yesterday.QueueID)
	claimOne(t, q, b.QueueID)
	_, err = q.Finish(ctx, queue.Finishing{QueueID: b.QueueID, Attempt: queue.Attempt{At: t0, Result: queue.ResultRejected}, Next: queue.StateRejected, Outcome: &queue.Outcome{Status: "ERROR", Message: "bad"}, NextAttemptAt: time.Time{}})

	require.NoError(t, err)

	retry := receipt(1)
	retry.IdemKey, retry.EarlierKey, retry.EarlierSince = "key-today", "key-1", t0
	e, replayed, err := q.Enqueue(ctx, retry)
	require.NoError(t, err)
	require.True(t, replayed)
	require.Equal(t, yesterday.QueueID, e.QueueID)
	got, err := q.Get(b.QueueID)
	require.NoError(t, err)
	require.Equal(t, queue.StateRejected, got.State, "today's sale is left alone")
}
