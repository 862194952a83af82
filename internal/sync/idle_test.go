package syncer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	syncer "github.com/receiptd/receiptd/internal/sync"
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
	e := r.enqueue(receiptBody("idle1"))
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSent }, 5*time.Second, time.Millisecond)

	time.Sleep(100 * time.Millisecond) // the claims that follow a send
	before := cq.claims.Load()
	time.Sleep(500 * time.Millisecond) // 25 poll intervals
	require.LessOrEqual(t, cq.claims.Load()-before, int64(1), "claims while idle")

	e = r.enqueue(receiptBody("idle2"))
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSent }, 5*time.Second, time.Millisecond)
}
