package syncer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/posapi"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
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

// TestSlowSendDataHoldsSends: while receiptd's own sendData runs (slow:
// the simulator's sendDataLatency), no receipt is sent; the receipts
// posted meanwhile go once it has answered.
func TestSlowSendDataHoldsSends(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{Seed: 14, Lotteries: 1000})
	require.NoError(t, s.SetFaults(sim.Faults{SendDataLatency: 400 * time.Millisecond}))
	var mu sync.Mutex
	var sendDataStart, sendDataEnd time.Time
	var creates []time.Time // when each create reached the upstream
	wrapped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/rest/sendData":
			mu.Lock()
			sendDataStart = time.Now()
			mu.Unlock()
			defer func() { mu.Lock(); sendDataEnd = time.Now(); mu.Unlock() }()
		case "/rest/receipt":
			mu.Lock()
			creates = append(creates, time.Now())
			mu.Unlock()
		}
		s.Handler().ServeHTTP(w, req)
	}))
	t.Cleanup(wrapped.Close)

	cfg := fastConfig()
	r := newRig(t, cfg, sim.Options{Seed: 15})
	c, err := client.New(client.Config{BaseURL: wrapped.URL, LookupBaseURL: wrapped.URL, Timeout: 5 * time.Second})
	require.NoError(t, err)
	s.SetLeftLotteries(100) // below min_lotteries: the watcher's first round sends the data
	w := posapi.New(c, posapi.Config{AutoSendData: true, MinLotteries: 200, CheckEvery: time.Hour}, r.logger(), nil)
	cfg.Limits = w
	r.w = syncer.New(r.q, c, cfg, r.logger(), nil)
	r.start()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return !sendDataStart.IsZero() }, 5*time.Second, time.Millisecond)
	entries := r.enqueueN("S", 5)
	r.waitSettled(10 * time.Second)
	for _, e := range entries {
		require.Equal(t, queue.StateSent, r.get(e.QueueID).State)
	}
	mu.Lock()
	defer mu.Unlock()
	require.False(t, sendDataEnd.IsZero())
	require.Len(t, creates, 5)
	for _, at := range creates {
		require.False(t, at.After(sendDataStart) && at.Before(sendDataEnd),
			"a create at %s during sendData %s..%s", at.Format(time.StampMicro), sendDataStart.Format(time.StampMicro), sendDataEnd.Format(time.StampMicro))
	}
	require.Equal(t, 1, s.SendDataCalls())
}

// countingLimits counts the receipts the worker reports issued.
type countingLimits struct {
	mu       sync.Mutex
	b2c, b2b int
}

func (c *countingLimits) BeginSend(context.Context) (func(), error)         { return func() {}, nil }
func (c *countingLimits) ReserveRefusal(context.Context, bool, string) bool { return false }
func (c *countingLimits) ReceiptIssued(b2c bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b2c {
		c.b2c++
	} else {
		c.b2b++
	}
}

// TestIssuedReceiptsAreCounted: every receipt the tax service issued is
// counted once, B2C apart (the lottery reserve's pace), once its send has
// ended.
func TestIssuedReceiptsAreCounted(t *testing.T) {
	cfg := fastConfig()
	l := &countingLimits{}
	cfg.Limits = l
	r := newRig(t, cfg, sim.Options{Seed: 15})
	r.enqueueN("C", 3)
	b2b := r.enqueue(strings.Replace(testkit.Receipt("C-B2B"), `"type":"B2C_RECEIPT"`, `"type":"B2B_RECEIPT"`, 1))
	r.start()
	r.waitSettled(10 * time.Second)
	require.Equal(t, queue.StateSent, r.get(b2b.QueueID).State)
	r.stop() // a receipt is counted after its answer is handed over: let the last sends end
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Equal(t, 3, l.b2c)
	require.Equal(t, 1, l.b2b)
}
