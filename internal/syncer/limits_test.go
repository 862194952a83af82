package syncer_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/posapi"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testkit"
)

// TestEmptyReserveKeepsReceiptsQueued: PosAPI's reserve runs out under
// sales; the refused receipts stay queued, the watcher's own sendData
// refills it, and every receipt is issued exactly once, none rejected.
func TestEmptyReserveKeepsReceiptsQueued(t *testing.T) {
	cfg := fastConfig()
	cfg.ReserveRetry = 50 * time.Millisecond
	r := newRig(t, cfg, sim.Options{Seed: 11, Lotteries: 3})
	w := posapi.New(r.c, posapi.Config{AutoSendData: true, MinLotteries: 0, CheckEvery: time.Hour,
		SendEvery: 100 * time.Millisecond}, r.logger(), nil)
	cfg.Limits = w
	r.w = syncer.New(r.q, r.c, cfg, r.logger(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	entries := r.enqueueN("L", 10)
	r.start()
	r.waitSettled(20 * time.Second)

	for _, e := range entries {
		got := r.get(e.QueueID)
		require.Equal(t, queue.StateSent, got.State, "%s: %+v", e.QueueID, got.Attempts)
	}
	for suffix, n := range r.issuedCount() {
		require.Equal(t, 1, n, "receipt %s issued %d times", suffix, n)
	}
	require.Len(t, r.issuedCount(), 10)
	require.GreaterOrEqual(t, r.sim.SendDataCalls(), 3, "10 receipts from a reserve of 3 need at least 3 refills")
	var waited []queue.Entry
	for _, e := range entries {
		waited = append(waited, r.get(e.QueueID))
	}
	n := attempts(waited, queue.ResultNoLotteries)
	require.Positive(t, n, "some receipts waited for the reserve")
	for _, e := range waited {
		for _, a := range e.Attempts {
			if a.Result == queue.ResultNoLotteries {
				require.Contains(t, a.Error, "lottery reserve is empty")
				require.Contains(t, a.Error, sim.ReserveEmptyMessage)
			}
		}
	}
}

// TestReserveRefusalOnlyForB2C: a refusal naming the lottery for a
// receipt that carries none (B2B) is a rejection like any other.
func TestReserveRefusalOnlyForB2C(t *testing.T) {
	cfg := fastConfig()
	r := newRig(t, cfg, sim.Options{Seed: 12})
	w := posapi.New(r.c, posapi.Config{AutoSendData: true, MinLotteries: 200}, r.logger(), nil)
	cfg.Limits = w
	r.w = syncer.New(r.q, r.c, cfg, r.logger(), nil)
	require.NoError(t, r.sim.SetFaults(sim.Faults{RejectNext: 1, RejectMessage: sim.ReserveEmptyMessage}))
	b2b := strings.Replace(testkit.Receipt("B2B01"), `"B2C_RECEIPT"`, `"B2B_RECEIPT"`, 1)
	e := r.enqueue(b2b)
	r.start()
	r.waitSettled(10 * time.Second)
	require.Equal(t, queue.StateRejected, r.get(e.QueueID).State)
}

// gateLimits is a Limits whose gate the test holds.
type gateLimits struct {
	open   chan struct{}
	waited chan struct{}
	once   sync.Once
}

func (g *gateLimits) BeginSend(ctx context.Context) (func(), error) {
	g.once.Do(func() { close(g.waited) })
	select {
	case <-g.open:
		return func() {}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (g *gateLimits) ReserveRefusal(context.Context, bool, string) bool { return false }
func (g *gateLimits) ReceiptIssued(bool)                                {}

// TestNoSendWhileTheGateIsHeld: the worker sends nothing while receiptd's
// own sendData holds the gate.
func TestNoSendWhileTheGateIsHeld(t *testing.T) {
	cfg := fastConfig()
	g := &gateLimits{open: make(chan struct{}), waited: make(chan struct{})}
	cfg.Limits = g
	r := newRig(t, cfg, sim.Options{Seed: 13})
	e := r.enqueue(testkit.Receipt("G0001"))
	r.start()
	<-g.waited
	time.Sleep(50 * time.Millisecond)
	require.Zero(t, r.sim.Requests(sim.RouteCreateReceipt), "no create while the gate is held")
	close(g.open)
	r.waitSettled(10 * time.Second)
	require.Equal(t, queue.StateSent, r.get(e.QueueID).State)
}

var _ syncer.Limits = (*posapi.Watcher)(nil)
