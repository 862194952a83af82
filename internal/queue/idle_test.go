package queue_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

// TestClaimWithNothingClaimableCommitsNothing: the worker polls Claim
// every second; when nothing is claimable (an empty queue, or a receipt
// waiting out its backoff) the poll must not write to the disk.
func TestClaimWithNothingClaimableCommitsNothing(t *testing.T) {
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	now := t0.Add(time.Hour)
	idle := func(what string) {
		t.Helper()
		before := st.Stats().Commits
		for range 5 {
			got, err := q.Claim(ctx, 2, now)
			require.NoError(t, err)
			require.Empty(t, got, what)
		}
		require.Equal(t, before, st.Stats().Commits, "%s: a claim of nothing committed", what)
	}
	idle("empty queue")

	e := enqueue(t, q, 1)
	claimOne(t, q, e.QueueID)
	retryAt := now.Add(time.Minute)
	_, err := q.Finish(ctx, queue.Finishing{QueueID: e.QueueID, Attempt: queue.Attempt{At: now, Result: queue.ResultTransient, Error: "503"}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: retryAt})

	require.NoError(t, err)
	idle("a receipt waiting out its backoff")

	got, err := q.Claim(ctx, 2, retryAt)
	require.NoError(t, err)
	require.Len(t, got, 1, "claimed once its backoff is over")
	finish(t, q, e.QueueID, queue.StateSent, &queue.Outcome{Status: "SUCCESS", ID: "U1"})
	idle("only a sent receipt")
}
