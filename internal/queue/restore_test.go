package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

// TestHoldRestored: after a restore, every receipt unsent in the backup is
// held and every waiting delete stopped, with the message; nothing is
// claimable; finished entries are untouched.
func TestHoldRestored(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	sent := reach(t, q, 1, queue.StateSent)
	queued := []string{reach(t, q, 2, queue.StateQueued), reach(t, q, 3, queue.StateQueued)}
	del := reachDelete(t, q, 4, queue.StateDeleteQueued)
	before := counts(t, q)
	require.Equal(t, 2, before[queue.StateQueued])

	n, err := q.HoldRestored(ctx, "restored from a backup: check first")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, id := range queued {
		e, err := q.Get(id)
		require.NoError(t, err)
		require.Equal(t, queue.StateHeld, e.State)
		require.Equal(t, "restored from a backup: check first", e.Outcome.Message)
		require.Equal(t, queue.ResultRestored, e.Attempts[len(e.Attempts)-1].Result)
	}
	d, err := q.Get(del)
	require.NoError(t, err)
	require.Equal(t, queue.StateDeleteRejected, d.State)
	s, err := q.Get(sent)
	require.NoError(t, err)
	require.Equal(t, queue.StateSent, s.State)
	got, err := q.Claim(ctx, 10, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, got, "nothing restored is sent without a check")
	c := counts(t, q)
	require.Equal(t, 2, c[queue.StateHeld])
	require.Zero(t, c[queue.StateQueued])
}

// TestRetryOfHeldNeedsCheck: a held entry is retried only with the
// operator's word that the tax service was checked.
func TestRetryOfHeldNeedsCheck(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	id := reach(t, q, 1, queue.StateHeld)
	_, err := q.Retry(ctx, id, false)
	require.ErrorIs(t, err, queue.ErrUnchecked)
	e, err := q.Get(id)
	require.NoError(t, err)
	require.Equal(t, queue.StateHeld, e.State)
	e, err = q.Retry(ctx, id, true)
	require.NoError(t, err)
	require.Equal(t, queue.StateQueued, e.State)
}

// TestRetryOfPaymentKeepsEarlierID: the retry of a payment entry issues a
// new receipt upstream; the first id stays in the entry's history.
func TestRetryOfPaymentKeepsEarlierID(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	id := reach(t, q, 1, queue.StatePayment)
	e, err := q.Retry(ctx, id, false)
	require.NoError(t, err)
	claimOne(t, q, id)
	e = finish(t, q, id, queue.StateSent, &queue.Outcome{Status: "SUCCESS", ID: "U-new"})
	require.Equal(t, "U-new", e.Outcome.ID)
	var record *queue.Attempt
	for i := range e.Attempts {
		if e.Attempts[i].Result == queue.ResultOperatorRetry {
			record = &e.Attempts[i]
		}
	}
	require.NotNil(t, record, "the retry is in the history")
	require.Equal(t, "U-"+id, record.UpstreamID)
	require.Contains(t, record.Error, "from payment")
}
