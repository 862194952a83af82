package syncer_test

import (
	"context"
	"fmt"
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

// countedClaims is the real queue, counting Claim calls.
type countedClaims struct {
	*queue.Queue
	claims atomic.Int64
}

func (c *countedClaims) Claim(ctx context.Context, max int, now time.Time) ([]queue.Entry, error) {
	c.claims.Add(1)
	return c.Queue.Claim(ctx, max, now)
}

// An idle worker (nothing unsent, the upstream up) does not poll the
// queue: new work wakes it through Notify, and a receipt posted after a
// long idle spell is still sent at once.
func TestIdleWorkerDoesNotPoll(t *testing.T) {
	cfg := fastConfig() // polls every 20 ms while something waits
	r := newRig(t, cfg, sim.Options{Seed: 5})
	cq := &countedClaims{Queue: r.q}
	r.w = syncer.New(cq, r.c, cfg, r.logger(), nil)
	r.start()
	e := r.enqueue(testkit.Receipt("idle1"))
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSent }, 5*time.Second, time.Millisecond)

	time.Sleep(100 * time.Millisecond) // the claims that follow a send
	before := cq.claims.Load()
	time.Sleep(500 * time.Millisecond) // 25 poll intervals
	require.LessOrEqual(t, cq.claims.Load()-before, int64(1), "claims while idle")

	e = r.enqueue(testkit.Receipt("idle2"))
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSent }, 5*time.Second, time.Millisecond)
}

// TestIdleWorkerWakesForOperatorWork: with a poll of an hour, only the
// wake-ups can start a send. What an operator makes sendable while the
// worker sleeps (a restored, held receipt retried with force, a rejected
// one retried, a delete of a sent one, a delete waiting behind its
// create) and what a restart finds queued are each sent without a POS
// posting anything new.
func TestIdleWorkerWakesForOperatorWork(t *testing.T) {
	ctx := context.Background()
	cfg := fastConfig()
	cfg.PollInterval = time.Hour
	r := newRig(t, cfg, sim.Options{Seed: 7})
	restored := r.enqueue(testkit.Receipt("restored1"))
	n, err := r.q.HoldRestored(ctx, "restored from a backup")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, r.sim.SetFaults(sim.Faults{RejectNext: 1}))
	rejected := r.enqueue(testkit.Receipt("rejected1"))
	r.start()
	reaches := func(id string, s queue.State, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return r.get(id).State == s }, 5*time.Second, 5*time.Millisecond, what)
	}
	reaches(rejected.QueueID, queue.StateRejected, "the rejection")
	time.Sleep(50 * time.Millisecond) // the worker goes to sleep

	_, err = r.q.Retry(ctx, restored.QueueID, true)
	require.NoError(t, err)
	reaches(restored.QueueID, queue.StateSent, "a restored receipt retried with force")
	_, err = r.q.Retry(ctx, rejected.QueueID, false)
	require.NoError(t, err)
	reaches(rejected.QueueID, queue.StateSent, "a rejected receipt retried")
	d, action, err := r.q.RequestDelete(ctx, rejected.QueueID, "", time.Now())
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action)
	reaches(d.QueueID, queue.StateDeleted, "a delete of a sent receipt")

	// A delete requested while its receipt is in flight waits for it.
	require.NoError(t, r.sim.SetFaults(sim.Faults{Latency: 300 * time.Millisecond}))
	behind := r.enqueue(testkit.Receipt("behind1"))
	reaches(behind.QueueID, queue.StateSending, "the create in flight")
	d, action, err = r.q.RequestDelete(ctx, behind.QueueID, "", time.Now())
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action)
	reaches(d.QueueID, queue.StateDeleted, "a delete waiting behind its create")
	reaches(behind.QueueID, queue.StateSent, "the create")
	require.NoError(t, r.sim.SetFaults(sim.Faults{}))

	// Queued when the daemon stops; a new queue and worker find it.
	r.stop()
	left := r.enqueue(testkit.Receipt("left1"))
	require.NoError(t, r.st.Close())
	r.st, err = store.Open(r.dbPath, store.Options{})
	require.NoError(t, err)
	r.q, err = queue.Open(ctx, r.st, queue.Options{})
	require.NoError(t, err)
	r.w = syncer.New(r.q, r.c, cfg, r.logger(), nil)
	r.start()
	reaches(left.QueueID, queue.StateSent, "a receipt left queued at a restart")
}

// countedViews is the real queue, counting OldestUnsent calls.
type countedViews struct {
	*queue.Queue
	views atomic.Int64
}

func (c *countedViews) OldestUnsent() (time.Time, bool, error) {
	c.views.Add(1)
	return c.Queue.OldestUnsent()
}

// startCountingViews starts a worker that polls every poll, checks its
// alerts every hour, and counts its reads of the unsent view.
func startCountingViews(t *testing.T, poll time.Duration, seed int64) (*rig, *countedViews) {
	t.Helper()
	cfg := fastConfig()
	cfg.PollInterval, cfg.AlertInterval = poll, time.Hour
	r := newRig(t, cfg, sim.Options{Seed: seed})
	cv := &countedViews{Queue: r.q}
	r.w = syncer.New(cv, r.c, cfg, r.logger(), nil)
	r.start()
	return r, cv
}

// The worker reads the queue's unsent view (the log's pending view, the
// costliest read of its loop) at its poll's ticks, not at each wake-up:
// receipts sent one after another, each waking it, make no such read
// while no tick comes.
func TestWakeUpsDoNotReadTheUnsentView(t *testing.T) {
	r, cv := startCountingViews(t, time.Hour, 5)
	// The alert loop's check at its start reads it once; the poll's
	// first tick is an hour away.
	require.Eventually(t, func() bool { return cv.views.Load() >= 1 }, 5*time.Second, time.Millisecond)
	before := cv.views.Load()
	for i := range 5 {
		e := r.enqueue(testkit.Receipt(fmt.Sprintf("wake%d", i)))
		require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSent }, 5*time.Second, time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the wake-ups that follow the sends
	require.Zero(t, cv.views.Load()-before, "reads of the unsent view without a poll's tick")
}

// After an idle spell longer than the poll interval, the first sales of a
// quiet till do not read the unsent view either: the poll, armed again by
// their wake-up, starts a whole interval instead of giving at once the
// tick it missed while idle.
func TestAWakeUpAfterIdleStartsAWholePollInterval(t *testing.T) {
	poll := 500 * time.Millisecond
	r, cv := startCountingViews(t, poll, 6)
	// The start's check, then the first tick, which finds nothing unsent
	// and stops the poll; then more than an interval idle.
	require.Eventually(t, func() bool { return cv.views.Load() >= 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(3 * poll / 2)
	before := cv.views.Load()
	for i := range 3 {
		e := r.enqueue(testkit.Receipt(fmt.Sprintf("quiet%d", i)))
		require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSent }, 5*time.Second, time.Millisecond)
	}
	require.Zero(t, cv.views.Load()-before, "reads of the unsent view before a whole interval has passed since the wake-up")
}
