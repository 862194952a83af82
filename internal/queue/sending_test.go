package queue_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

// sendingReceipt is receipt(n) with the accept carrying its claim.
func sendingReceipt(n int) queue.NewReceipt {
	r := receipt(n)
	r.Sending = true
	return r
}

// A receipt whose accept carries the claim is sending from its record on:
// every read says so before and after it is applied, no claim takes it
// again, a queued receipt logged before it stays claimable, and its
// outcome is recorded as for a claimed one.
func TestAcceptCarriesTheClaim(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	now := t0.Add(time.Hour)

	idle, err := q.NothingClaimable(now)
	require.NoError(t, err)
	require.True(t, idle, "an empty queue")
	e, replayed, err := q.Enqueue(ctx, sendingReceipt(1))
	require.NoError(t, err)
	require.False(t, replayed)
	require.Equal(t, queue.StateSending, e.State)

	check := func(when string) {
		got, err := q.Get(e.QueueID)
		require.NoError(t, err)
		require.Equal(t, queue.StateSending, got.State, when)
		c := counts(t, q)
		require.Equal(t, 1, c[queue.StateSending], when)
		require.Zero(t, c[queue.StateQueued], when)
		page, _, err := q.List(queue.ListOptions{State: queue.StateSending})
		require.NoError(t, err)
		require.Equal(t, []string{e.QueueID}, ids(page), when)
		page, _, err = q.List(queue.ListOptions{State: queue.StateQueued})
		require.NoError(t, err)
		require.Empty(t, page, when)
		latest, err := q.Latest(queue.StateSending, 5)
		require.NoError(t, err)
		require.Equal(t, []string{e.QueueID}, ids(latest), when)
		idle, err := q.NothingClaimable(now)
		require.NoError(t, err)
		require.True(t, idle, when+": nothing to claim")
		claimed, err := q.Claim(ctx, 5, now)
		require.NoError(t, err)
		require.Empty(t, claimed, when+": never claimed twice")
	}
	check("in the log only")
	require.NoError(t, q.ApplyAll(ctx))
	require.Equal(t, 1, fileEntries(t, st))
	check("applied")

	// A queued receipt logged after it is claimable, and holds up the
	// next claimed accept (NothingClaimable).
	enqueue(t, q, 2)
	idle, err = q.NothingClaimable(now)
	require.NoError(t, err)
	require.False(t, idle)
	ahead, err := q.ClaimableAhead("Q000000000003", now, 5)
	require.NoError(t, err)
	require.Equal(t, 1, ahead, "the sending one is not ahead, the queued one is")

	fin := queue.Finishing{QueueID: e.QueueID, Next: queue.StateSent, Outcome: &queue.Outcome{Status: "SUCCESS", ID: "1"},
		Attempt: queue.Attempt{At: now, Result: queue.ResultSuccess}}
	done, claimed, err := q.FinishAndClaim(ctx, fin, 1, now)
	require.NoError(t, err)
	require.Equal(t, queue.StateSent, done.State)
	require.Equal(t, []string{"Q000000000002"}, ids(claimed))
	closeLogged(t, q, st)
}

// A kill after a claimed accept's record and before its outcome leaves
// the receipt sending in the log: the next open applies it and counts
// its attempt as interrupted (ambiguous), as for a claim of the file, and
// it is claimable again. A record applied before the kill is recovered
// the same way.
func TestClaimedAcceptInterruptedByAKill(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	_, _, err := q.Enqueue(ctx, sendingReceipt(1))
	require.NoError(t, err)
	require.NoError(t, q.ApplyAll(ctx))
	_, _, err = q.Enqueue(ctx, sendingReceipt(2))
	require.NoError(t, err)
	enqueue(t, q, 3)
	require.NoError(t, queue.Abandon(q))
	require.NoError(t, st.Close())

	q, st = openLogged(t, path, 0)
	require.Equal(t, 2, q.Recovered(), "the file's sending entry and the log's")
	for _, id := range []string{"Q000000000001", "Q000000000002"} {
		e, err := q.Get(id)
		require.NoError(t, err)
		require.Equal(t, queue.StateQueued, e.State, id)
		require.Equal(t, 1, e.Ambiguous, id)
		require.Len(t, e.Attempts, 1, id)
		require.Equal(t, queue.ResultInterrupted, e.Attempts[0].Result, id)
	}
	c := counts(t, q)
	require.Equal(t, 3, c[queue.StateQueued])
	require.Zero(t, c[queue.StateSending])
	claimed, err := q.Claim(ctx, 5, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000001", "Q000000000002", "Q000000000003"}, ids(claimed), "in their order")
	require.NoError(t, queue.CheckIndexes(st))
	closeLogged(t, q, st)
}

// An attempt's outcome is a record of the log: the answer may go to the
// waiting request as soon as the record is in the log's file
// (Finishing.Recorded, called once, before any claim; every read sees the
// outcome from then on, before its flush), every read sees it before it
// is applied, a kill before it is applied loses nothing (the next open
// applies it: the entry is finished, not interrupted), and it reaches the
// file's indexes (the upstream id a delete names).
func TestOutcomeIsALogRecord(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	now := t0.Add(time.Hour)
	first, _, err := q.Enqueue(ctx, sendingReceipt(1))
	require.NoError(t, err)
	require.NoError(t, q.ApplyAll(ctx)) // in the file, in sending
	second, _, err := q.Enqueue(ctx, sendingReceipt(2))
	require.NoError(t, err) // in the log only
	for i, e := range []queue.Entry{first, second} {
		recorded := 0
		seen := func() { // what the answer's request would read at once
			recorded++
			got, err := q.Get(e.QueueID)
			require.NoError(t, err)
			require.Equal(t, queue.StateSent, got.State, "read at Recorded, before its flush")
			counts, err := q.Counts()
			require.NoError(t, err)
			require.Equal(t, i+1, counts[queue.StateSent])
		}
		fin := queue.Finishing{QueueID: e.QueueID, Next: queue.StateSent, Recorded: seen, Awaited: true,
			Outcome: &queue.Outcome{Status: "SUCCESS", ID: fmt.Sprintf("U%d", i+1)},
			Attempt: queue.Attempt{At: now, Result: queue.ResultSuccess}}
		done, claimed, err := q.FinishAndClaim(ctx, fin, 1, now)
		require.NoError(t, err)
		require.Empty(t, claimed)
		require.Equal(t, queue.StateSent, done.State)
		require.Equal(t, 1, recorded, "Recorded called once")
	}
	require.Equal(t, 1, fileEntries(t, st), "the outcomes are not in the file yet")
	check := func(when string) {
		for i, id := range []string{first.QueueID, second.QueueID} {
			e, err := q.Get(id)
			require.NoError(t, err)
			require.Equal(t, queue.StateSent, e.State, when)
			require.Equal(t, fmt.Sprintf("U%d", i+1), e.Outcome.ID, when)
			require.Len(t, e.Attempts, 1, when)
			require.Zero(t, e.Ambiguous, when)
		}
		c := counts(t, q)
		require.Equal(t, 2, c[queue.StateSent], when)
		require.Zero(t, c[queue.StateSending], when)
		_, unsent, err := q.OldestUnsent()
		require.NoError(t, err)
		require.False(t, unsent, when)
		page, _, err := q.List(queue.ListOptions{State: queue.StateSending})
		require.NoError(t, err)
		require.Empty(t, page, when)
		e, replayed, err := q.Enqueue(ctx, sendingReceipt(1))
		require.NoError(t, err)
		require.True(t, replayed, when)
		require.Equal(t, queue.StateSent, e.State, when+": a replay sees the outcome")
	}
	check("in the log only")
	require.NoError(t, queue.Abandon(q)) // a kill
	require.NoError(t, st.Close())

	q, st = openLogged(t, path, 0)
	require.Zero(t, q.Recovered(), "finished, not interrupted")
	check("after a kill and an open")
	d, action, err := q.RequestDelete(ctx, "U1", "", now)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action, "the upstream id is indexed")
	require.Equal(t, first.QueueID, d.DeleteTarget)

	// Nobody waiting (a backlog drained): the outcome and the claim share
	// one commit of the file, as without a log.
	third, _, err := q.Enqueue(ctx, sendingReceipt(3))
	require.NoError(t, err)
	files := fileEntries(t, st)
	recorded := 0
	_, _, err = q.FinishAndClaim(ctx, queue.Finishing{QueueID: third.QueueID, Next: queue.StateSent, Recorded: func() { recorded++ },
		Outcome: &queue.Outcome{Status: "SUCCESS", ID: "U3"}, Attempt: queue.Attempt{At: now, Result: queue.ResultSuccess}}, 1, now)
	require.NoError(t, err)
	require.Equal(t, 1, recorded)
	require.Equal(t, files+1, fileEntries(t, st), "committed to the file")
	closeLogged(t, q, st)
}

// A delete that waits for a receipt's outcome becomes claimable once
// that outcome is recorded, even while the outcome is a log record the
// file has not applied: NothingClaimable says so (the claim applies it
// first), so a new sale's accept does not carry its claim ahead of it.
func TestADeleteWaitingForAnOutcomeInTheLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openLogged(t, path, 0)
	now := t0.Add(time.Hour)
	e, _, err := q.Enqueue(ctx, sendingReceipt(1))
	require.NoError(t, err)
	require.NoError(t, q.ApplyAll(ctx))
	del, _, err := q.RequestDelete(ctx, e.QueueID, "", now)
	require.NoError(t, err)
	idle, err := q.NothingClaimable(now)
	require.NoError(t, err)
	require.True(t, idle, "the delete waits for the receipt's outcome")
	claimed, err := q.Claim(ctx, 5, now) // indexes the delete: no tail is left to claim
	require.NoError(t, err)
	require.Empty(t, claimed)

	fin := queue.Finishing{QueueID: e.QueueID, Next: queue.StateSent, Awaited: true, // a log record, as a waited-for sale's
		Outcome: &queue.Outcome{Status: "SUCCESS", ID: "1", Date: "2026-11-28 10:00:00"},
		Attempt: queue.Attempt{At: now, Result: queue.ResultSuccess}}
	_, _, err = q.FinishAndClaim(ctx, fin, 0, now)
	require.NoError(t, err)
	idle, err = q.NothingClaimable(now)
	require.NoError(t, err)
	require.False(t, idle, "the outcome, in the log only, frees the delete")
	claimed, err = q.Claim(ctx, 5, now)
	require.NoError(t, err)
	require.Equal(t, []string{del.QueueID}, ids(claimed))
	closeLogged(t, q, st)
}
