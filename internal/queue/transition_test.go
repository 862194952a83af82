package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

type edge struct {
	kind     queue.Kind
	from, to queue.State
}

var sentOutcome = &queue.Outcome{Status: "SUCCESS", ID: "U-1", Date: "2025-03-01 17:00:00"}

// reach drives a fresh receipt into state s and returns its queueId.
func reach(t *testing.T, q *queue.Queue, n int, s queue.State) string {
	t.Helper()
	id := enqueue(t, q, n).QueueID
	if s == queue.StateQueued {
		return id
	}
	if s == queue.StateCancelled {
		_, a, err := q.RequestDelete(ctx, id, "", t0)
		require.NoError(t, err)
		require.Equal(t, queue.DeleteCancelled, a)
		return id
	}
	claimOne(t, q, id)
	if s != queue.StateSending {
		finish(t, q, id, s, &queue.Outcome{Status: "SUCCESS", ID: "U-" + id, Date: "d"})
	}
	return id
}

// reachDelete makes a delete entry for an unknown upstream id and drives it into s.
func reachDelete(t *testing.T, q *queue.Queue, n int, s queue.State) string {
	t.Helper()
	d, a, err := q.RequestDelete(ctx, "UNKNOWN-"+string(rune('a'+n)), "2025-03-01 10:00:00", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, a)
	if s == queue.StateDeleteQueued {
		return d.QueueID
	}
	claimOne(t, q, d.QueueID)
	if s != queue.StateSending {
		finish(t, q, d.QueueID, s, nil)
	}
	return d.QueueID
}

func TestEveryLegalTransition(t *testing.T) {
	t.Parallel()
	covered := map[edge]bool{}
	do := func(name string, e edge, run func(t *testing.T, q *queue.Queue)) {
		t.Run(name, func(t *testing.T) {
			q := newQueue(t)
			run(t, q)
			covered[e] = true
		})
	}
	R, D := queue.KindReceipt, queue.KindDelete
	do("queued→sending by Claim", edge{R, queue.StateQueued, queue.StateSending}, func(t *testing.T, q *queue.Queue) {
		reach(t, q, 1, queue.StateSending)
	})
	do("queued→cancelled by RequestDelete", edge{R, queue.StateQueued, queue.StateCancelled}, func(t *testing.T, q *queue.Queue) {
		e, err := q.Get(reach(t, q, 1, queue.StateCancelled))
		require.NoError(t, err)
		require.Equal(t, queue.StateCancelled, e.State)
		got, err := q.Claim(ctx, 10, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Empty(t, got, "a cancelled receipt is never sent")
	})
	for _, to := range []queue.State{queue.StateSent, queue.StatePayment, queue.StateRejected, queue.StateHeld, queue.StateQueued} {
		do("sending→"+string(to)+" by Finish", edge{R, queue.StateSending, to}, func(t *testing.T, q *queue.Queue) {
			reach(t, q, 1, to)
		})
	}
	for _, from := range []queue.State{queue.StateRejected, queue.StatePayment, queue.StateHeld} {
		do(string(from)+"→queued by Retry", edge{R, from, queue.StateQueued}, func(t *testing.T, q *queue.Queue) {
			id := reach(t, q, 1, from)
			e, err := q.Retry(ctx, id, true)
			require.NoError(t, err)
			require.Equal(t, queue.StateQueued, e.State)
			claimOne(t, q, id)
		})
	}
	do("queued→held by HoldRestored", edge{R, queue.StateQueued, queue.StateHeld}, func(t *testing.T, q *queue.Queue) {
		id := reach(t, q, 1, queue.StateQueued)
		n, err := q.HoldRestored(ctx, "restored")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		e, err := q.Get(id)
		require.NoError(t, err)
		require.Equal(t, queue.StateHeld, e.State)
	})
	do("rejected→cancelled by RequestDelete", edge{R, queue.StateRejected, queue.StateCancelled}, func(t *testing.T, q *queue.Queue) {
		id := reach(t, q, 1, queue.StateRejected)
		e, a, err := q.RequestDelete(ctx, id, "", t0)
		require.NoError(t, err)
		require.Equal(t, queue.DeleteCancelled, a)
		require.Equal(t, queue.StateCancelled, e.State)
	})
	do("delete_queued→sending by Claim", edge{D, queue.StateDeleteQueued, queue.StateSending}, func(t *testing.T, q *queue.Queue) {
		reachDelete(t, q, 1, queue.StateSending)
	})
	do("delete_queued→delete_rejected by Claim", edge{D, queue.StateDeleteQueued, queue.StateDeleteRejected}, func(t *testing.T, q *queue.Queue) {
		id := reach(t, q, 1, queue.StateSending)
		d, a, err := q.RequestDelete(ctx, id, "", t0)
		require.NoError(t, err)
		require.Equal(t, queue.DeleteQueued, a)
		finish(t, q, id, queue.StateRejected, &queue.Outcome{Status: "ERROR", Message: "bad tin"})
		got, err := q.Claim(ctx, 10, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Empty(t, got, "a delete of a rejected receipt is never sent")
		d, err = q.Get(d.QueueID)
		require.NoError(t, err)
		require.Equal(t, queue.StateDeleteRejected, d.State)
		require.Contains(t, d.Outcome.Message, "nothing to delete")
	})
	for _, to := range []queue.State{queue.StateDeleted, queue.StateDeleteRejected, queue.StateDeleteQueued} {
		do("delete sending→"+string(to)+" by Finish", edge{D, queue.StateSending, to}, func(t *testing.T, q *queue.Queue) {
			reachDelete(t, q, 1, to)
		})
	}
	do("delete_rejected→delete_queued by Retry", edge{D, queue.StateDeleteRejected, queue.StateDeleteQueued}, func(t *testing.T, q *queue.Queue) {
		id := reachDelete(t, q, 1, queue.StateDeleteRejected)
		e, err := q.Retry(ctx, id, true)
		require.NoError(t, err)
		require.Equal(t, queue.StateDeleteQueued, e.State)
	})

	for _, k := range []queue.Kind{R, D} {
		for _, from := range queue.AllStates {
			for _, to := range queue.AllStates {
				if queue.Legal(k, from, to) {
					require.True(t, covered[edge{k, from, to}], "legal %s transition %s→%s has no test", k, from, to)
				}
			}
		}
	}
}

func TestIllegalTransitionsAreRefused(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	// Claims take the oldest claimable entry, so the queued ones come last.
	receipts, deletes := map[queue.State]string{}, map[queue.State]string{}
	for i, s := range []queue.State{queue.StateSending, queue.StateDeleted, queue.StateDeleteRejected} {
		deletes[s] = reachDelete(t, q, i+1, s)
	}
	for i, s := range []queue.State{queue.StateSending, queue.StateSent, queue.StatePayment,
		queue.StateRejected, queue.StateHeld, queue.StateCancelled} {
		receipts[s] = reach(t, q, i+1, s)
	}
	deletes[queue.StateDeleteQueued] = reachDelete(t, q, 9, queue.StateDeleteQueued)
	receipts[queue.StateQueued] = reach(t, q, 9, queue.StateQueued)
	before := counts(t, q)
	attempt := queue.Attempt{At: t0, Result: queue.ResultSuccess}

	check := func(kind queue.Kind, ids map[queue.State]string) {
		for from, id := range ids {
			for _, to := range queue.AllStates {
				if from == queue.StateSending && queue.Legal(kind, from, to) {
					continue
				}
				_, err := q.Finish(ctx, queue.Finishing{QueueID: id, Attempt: attempt, Next: to, Outcome: nil, NextAttemptAt: time.Time{}})
				require.ErrorIs(t, err, queue.ErrIllegalTransition, "Finish %s %s→%s", kind, from, to)
			}
			retryable := from == queue.StateRejected || from == queue.StatePayment || from == queue.StateHeld ||
				from == queue.StateDeleteRejected
			if !retryable {
				_, err := q.Retry(ctx, id, true)
				require.ErrorIs(t, err, queue.ErrIllegalTransition, "Retry %s from %s", kind, from)
			}
			e, err := q.Get(id)
			require.NoError(t, err)
			require.Equal(t, from, e.State, "a refused change leaves the entry as it was")
		}
	}
	check(queue.KindReceipt, receipts)
	check(queue.KindDelete, deletes)
	_, _, err := q.RequestDelete(ctx, deletes[queue.StateDeleteQueued], "", t0)
	require.ErrorIs(t, err, queue.ErrIllegalTransition, "a delete of a delete")
	require.Equal(t, before, counts(t, q), "counters unchanged by refused changes")
	_, err = q.Retry(ctx, "Q000000009999", true)
	require.ErrorIs(t, err, queue.ErrNotFound)
}
