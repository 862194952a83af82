package syncer_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// failingWrites is the real queue whose FinishAndClaim commits fail as on
// a full disk whenever fails says so (given the claim size).
type failingWrites struct {
	*queue.Queue
	fails  func(max int) bool
	failed atomic.Int64
}

func (f *failingWrites) FinishAndClaim(ctx context.Context, fin queue.Finishing, max int, now time.Time) (queue.Entry, []queue.Entry, error) {
	if f.fails(max) {
		f.failed.Add(1)
		return queue.Entry{}, nil, fmt.Errorf("finish %s: %w", fin.QueueID, store.ErrDiskFull)
	}
	return f.Queue.FinishAndClaim(ctx, fin, max, now)
}

// An upstream answer that cannot be written is kept and written once space
// returns: the entry never stays in sending (which a restart would resend
// as ambiguous), and the receipt is issued once.
func TestOutcomeRecordedOnceSpaceReturns(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 17})
	var full atomic.Bool // outcome writes fail while it is set
	full.Store(true)
	fd := &failingWrites{Queue: r.q, fails: func(int) bool { return full.Load() }}
	r.w = syncer.New(fd, r.c, fastConfig(), r.logger(), nil)
	e := r.enqueue(testkit.Receipt("full"))
	r.start()

	require.Eventually(t, func() bool { return fd.failed.Load() >= 3 }, 5*time.Second, time.Millisecond)
	require.Len(t, r.sim.Receipts(), 1)
	require.Equal(t, queue.StateSending, r.get(e.QueueID).State, "nothing recorded while the disk is full")
	require.Equal(t, 1, strings.Count(r.logs.String(), "cannot record the outcome yet"), "warned once, not per retry")

	full.Store(false)
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSent }, 5*time.Second, time.Millisecond)
	got := r.get(e.QueueID)
	require.Equal(t, r.sim.Receipts()[0].ID, got.Outcome.ID)
	require.Len(t, got.Attempts, 1)
	require.Len(t, r.sim.Receipts(), 1, "issued once")
	// The log line follows the commit that made the entry sent.
	require.Eventually(t, func() bool { return strings.Contains(r.logs.String(), "outcome recorded after retrying") },
		5*time.Second, time.Millisecond)
}

// When only the claim half of a finish-and-claim cannot be written, the
// retry records the outcome alone: every entry ends sent, issued once,
// instead of staying in sending until shutdown.
func TestOutcomeRecordedWhenOnlyTheClaimFails(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 20})
	// Commits fail as on a nearly full disk whenever they also claim
	// entries (indexing the unindexed tail can take many pages); a finish
	// alone still fits.
	cf := &failingWrites{Queue: r.q, fails: func(max int) bool { return max > 0 }}
	r.w = syncer.New(cf, r.c, fastConfig(), r.logger(), nil)
	entries := r.enqueueN("claimfull", 5)
	r.start()
	r.waitSettled(10 * time.Second)

	require.Positive(t, cf.failed.Load(), "the claim half never failed: the fault was not exercised")
	issued := r.issuedCount()
	for _, e := range entries {
		got := r.get(e.QueueID)
		require.Equal(t, queue.StateSent, got.State)
		require.Len(t, got.Attempts, 1)
		require.Equal(t, 1, issued[e.BillIDSuffix], "issued once")
	}
}
