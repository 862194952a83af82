package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

func TestDeleteWaitsForTheSendThenUsesItsOutcome(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	r := reach(t, q, 1, queue.StateSending)
	d, a, err := q.RequestDelete(ctx, r, "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, a)
	require.Equal(t, r, d.DeleteTarget)

	got, err := q.Claim(ctx, 10, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, got, "never sent before its create finished")

	again, a, err := q.RequestDelete(ctx, r, "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteExisting, a)
	require.Equal(t, d.QueueID, again.QueueID)

	finish(t, q, r, queue.StateSent, sentOutcome)
	select {
	case <-q.Notify():
	default:
		t.Fatal("a delete that became claimable must wake the worker")
	}
	got, err = q.Claim(ctx, 10, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, d.QueueID, got[0].QueueID)
	require.JSONEq(t, `{"id":"U-1","date":"2025-03-01 17:00:00"}`, string(got[0].Body))
}

func TestDeleteBySentUpstreamIDAndUnknownID(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	r := reach(t, q, 1, queue.StateSending)
	finish(t, q, r, queue.StateSent, sentOutcome)

	d, a, err := q.RequestDelete(ctx, "U-1", "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, a)
	require.Equal(t, r, d.DeleteTarget)
	require.Equal(t, "U-1", d.DeleteID)
	require.Equal(t, sentOutcome.Date, d.DeleteDate, "date defaults to the receipt's own")

	u, a, err := q.RequestDelete(ctx, "999", "2025-01-01 10:00:00", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, a)
	require.Empty(t, u.DeleteTarget)
	require.JSONEq(t, `{"id":"999","date":"2025-01-01 10:00:00"}`, string(u.Body))
	u2, a, err := q.RequestDelete(ctx, "999", "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteExisting, a)
	require.Equal(t, u.QueueID, u2.QueueID)

	// A queueId-shaped id with no entry is not an upstream id either (those
	// are 33 digits): TestDeleteOfUnknownQueueIDIsNotFound.

	// Cancelled receipts answer with themselves.
	c := reach(t, q, 2, queue.StateCancelled)
	e, a, err := q.RequestDelete(ctx, c, "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteExisting, a)
	require.Equal(t, queue.StateCancelled, e.State)
}

func TestQueuedAfterAmbiguousIsNotCancelledSilently(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	id := reach(t, q, 1, queue.StateSending)
	_, err := q.Finish(ctx, queue.Finishing{QueueID: id, Attempt: queue.Attempt{At: t0, Result: queue.ResultAmbiguous}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: time.Time{}})
	require.NoError(t, err)
	d, a, err := q.RequestDelete(ctx, id, "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, a)
	require.Equal(t, id, d.DeleteTarget)
	e, err := q.Get(id)
	require.NoError(t, err)
	require.Equal(t, queue.StateQueued, e.State)
	require.Equal(t, 1, e.Ambiguous)
}

func TestListCountsOldestUnsent(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	_, ok, err := q.OldestUnsent()
	require.NoError(t, err)
	require.False(t, ok)
	for i := 1; i <= 5; i++ {
		enqueue(t, q, i)
	}
	claimOne(t, q, "Q000000000001")
	finish(t, q, "Q000000000001", queue.StateSent, sentOutcome)

	oldest, ok, err := q.OldestUnsent()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t0.Add(2*time.Second), oldest, "a sent entry is not unsent")

	c := counts(t, q)
	require.Equal(t, 4, c[queue.StateQueued])
	require.Equal(t, 1, c[queue.StateSent])
	require.Len(t, c, len(queue.AllStates))

	var ids []string
	after := ""
	for {
		page, next, err := q.List(queue.ListOptions{Limit: 2, After: after})
		require.NoError(t, err)
		for _, e := range page {
			ids = append(ids, e.QueueID)
		}
		if next == "" {
			break
		}
		after = next
	}
	require.Equal(t, []string{"Q000000000001", "Q000000000002", "Q000000000003", "Q000000000004", "Q000000000005"}, ids)

	page, next, err := q.List(queue.ListOptions{State: queue.StateQueued, Limit: 3, After: "Q000000000002"})
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, page, 3)
	require.Equal(t, "Q000000000003", page[0].QueueID)
	_, _, err = q.List(queue.ListOptions{After: "bogus"})
	require.ErrorIs(t, err, queue.ErrInvalid)
}

func TestPruneRemovesFinishedWithTheirIndexRows(t *testing.T) {
	t.Parallel()
	q := newQueue(t) // the queue's clock says t0+1h for every update
	sent := reach(t, q, 1, queue.StateSent)
	cancelled := reach(t, q, 2, queue.StateCancelled)
	held := reach(t, q, 3, queue.StateHeld)
	queued := enqueue(t, q, 4).QueueID

	n, err := q.Prune(ctx, t0.Add(30*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the cancel (at t0) is older; the send finished at t0+1h")
	_, err = q.Get(sent)
	require.NoError(t, err)

	n, err = q.Prune(ctx, t0.Add(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, id := range []string{sent, cancelled} {
		_, err := q.Get(id)
		require.ErrorIs(t, err, queue.ErrNotFound)
	}
	for _, id := range []string{held, queued} {
		_, err := q.Get(id)
		require.NoError(t, err, "unfinished work is never pruned")
	}
	c := counts(t, q)
	require.Zero(t, c[queue.StateSent])
	require.Zero(t, c[queue.StateCancelled])

	// Its idempotency key went with it, and so did the upstream id.
	e, replayed, err := q.Enqueue(ctx, receipt(1))
	require.NoError(t, err)
	require.False(t, replayed)
	require.NotEqual(t, sent, e.QueueID)
	d, _, err := q.RequestDelete(ctx, "U-"+sent, "", t0)
	require.NoError(t, err)
	require.Empty(t, d.DeleteTarget, "the pruned receipt's upstream id is unknown now")
}

func TestNotifyOnEnqueueAndRetry(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	id := reach(t, q, 1, queue.StateRejected)
	<-q.Notify()
	enqueue(t, q, 2)
	enqueue(t, q, 3)
	select {
	case <-q.Notify():
	default:
		t.Fatal("no signal after enqueue")
	}
	select {
	case <-q.Notify():
		t.Fatal("the signal coalesces (capacity 1)")
	default:
	}
	_, err := q.Retry(ctx, id, true)
	require.NoError(t, err)
	select {
	case <-q.Notify():
	default:
		t.Fatal("no signal after retry")
	}
}

// waitingDeleteOfRejected makes receipt n, gives it an ambiguous attempt,
// requests its delete (which waits for it), then has it rejected. It returns
// the delete, not yet claimed.
func waitingDeleteOfRejected(t *testing.T, q *queue.Queue, n int) queue.Entry {
	t.Helper()
	id := reach(t, q, n, queue.StateSending)
	_, err := q.Finish(ctx, queue.Finishing{QueueID: id, Attempt: queue.Attempt{At: t0, Result: queue.ResultAmbiguous}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: time.Time{}})
	require.NoError(t, err)
	d, a, err := q.RequestDelete(ctx, id, "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, a, "it waits for the receipt")
	claimOne(t, q, id)
	finish(t, q, id, queue.StateRejected, &queue.Outcome{Status: "ERROR", Message: "duplicate"})
	return d
}

// A waiting delete whose receipt had an ambiguous attempt and then was
// rejected cannot be sent (no upstream id), but its message must not claim
// there is nothing upstream.
func TestDeleteOfRejectedAfterAmbiguousSaysItMayExist(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	d := waitingDeleteOfRejected(t, q, 1)
	got, err := q.Claim(ctx, 1, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.Empty(t, got, "the delete is finished, not sent")
	d, err = q.Get(d.QueueID)
	require.NoError(t, err)
	require.Equal(t, queue.StateDeleteRejected, d.State)
	require.Contains(t, d.Outcome.Message, "may exist upstream")
}

// A queueId-shaped id that matches no entry is not sent upstream as a
// receipt id (those are 33 digits): it is ErrNotFound and nothing is stored.
func TestDeleteOfUnknownQueueIDIsNotFound(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	enqueue(t, q, 1)
	_, _, err := q.RequestDelete(ctx, "Q000000009999", "", t0)
	require.ErrorIs(t, err, queue.ErrNotFound)
	c := counts(t, q)
	require.Zero(t, c[queue.StateDeleteQueued])
	require.Equal(t, 1, c[queue.StateQueued])
}

// The date is optional upstream (2.6): a delete without one leaves the
// field out instead of sending an empty Datetime.
func TestDeleteBodyLeavesOutAnUnknownDate(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	d, _, err := q.RequestDelete(ctx, "000000000000000000000000000000077", "", t0)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"000000000000000000000000000000077"}`, string(d.Body))
	d, _, err = q.RequestDelete(ctx, "000000000000000000000000000000078", "2025-03-01 10:00:00", t0)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"000000000000000000000000000000078","date":"2025-03-01 10:00:00"}`, string(d.Body))
}

// A delete finished as delete_rejected inside a claim does not take the
// place of an entry that can be sent: a claim returns fewer than max only
// when fewer are claimable.
func TestRejectedDeleteDoesNotTakeAClaimPlace(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	d := waitingDeleteOfRejected(t, q, 1)
	next := enqueue(t, q, 2).QueueID

	got, err := q.Claim(ctx, 1, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, next, got[0].QueueID)
	d, err = q.Get(d.QueueID)
	require.NoError(t, err)
	require.Equal(t, queue.StateDeleteRejected, d.State)
}
