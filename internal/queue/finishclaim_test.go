package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

func TestFinishAndClaimIsOneStep(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	ctx := context.Background()
	a, b, c := enqueue(t, q, 1), enqueue(t, q, 2), enqueue(t, q, 3)
	claimOne(t, q, a.QueueID)

	done, next, err := q.FinishAndClaim(ctx, queue.Finishing{QueueID: a.QueueID, Attempt: queue.Attempt{At: time.Now(), Result: queue.ResultSuccess}, Next: queue.StateSent, Outcome: &queue.Outcome{Status: "SUCCESS", ID: "x1"}, NextAttemptAt: time.Time{}},
		1, time.Now())

	require.NoError(t, err)
	require.Equal(t, queue.StateSent, done.State)
	require.Len(t, next, 1)
	require.Equal(t, b.QueueID, next[0].QueueID, "FIFO")
	require.Equal(t, queue.StateSending, next[0].State)

	// A refused finish claims nothing: the commit is all or nothing.
	_, next, err = q.FinishAndClaim(ctx, queue.Finishing{QueueID: c.QueueID, Attempt: queue.Attempt{At: time.Now(), Result: queue.ResultSuccess}, Next: queue.StateSent, Outcome: nil, NextAttemptAt: time.Time{}},
		1, time.Now())

	require.ErrorIs(t, err, queue.ErrIllegalTransition)
	require.Empty(t, next)
	got, err := q.Get(c.QueueID)
	require.NoError(t, err)
	require.Equal(t, queue.StateQueued, got.State)
	require.Equal(t, map[queue.State]int{queue.StateSent: 1, queue.StateSending: 1, queue.StateQueued: 1}, nonZero(counts(t, q)))

	// max 0 only finishes.
	_, next, err = q.FinishAndClaim(ctx, queue.Finishing{QueueID: b.QueueID, Attempt: queue.Attempt{At: time.Now(), Result: queue.ResultTransient}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: time.Now().Add(time.Hour)},
		0, time.Now())

	require.NoError(t, err)
	require.Empty(t, next)
}

func nonZero(m map[queue.State]int) map[queue.State]int {
	out := map[queue.State]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
