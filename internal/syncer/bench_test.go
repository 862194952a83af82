package syncer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// BenchmarkDrain drains a backlog to the simulator answering after a fixed
// 20 ms, at sync.concurrency 1, 2 and 8, and reports the drain rate beside
// the simulator's capacity at that concurrency, measured in the same run
// by a plain loop of creates through the same client. Both rates come from
// the simulator's own issue times (first to last receipt), so the worker's
// start and the test's polling for the end are not counted as draining:
//
//	go test -run '^$' -bench Drain -benchtime 3x ./internal/sync/
func BenchmarkDrain(b *testing.B) {
	const latency = 20 * time.Millisecond
	for _, conc := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			cfg := fastConfig()
			cfg.Concurrency = conc
			r := newRig(b, cfg, sim.Options{Seed: 1, Latency: latency})
			n := conc * 60 // about 1.2 s of capacity
			capacity := simCapacity(b, r.sim, conc, n)
			var issued int
			var drained time.Duration
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				r.enqueueN(fmt.Sprintf("i%d-", i), n)
				r.sim.Reset()
				b.StartTimer()
				r.start()
				r.waitSettled(time.Minute)
				r.stop()
				span, count := issueSpan(r.sim.Receipts())
				drained += span
				issued += count
			}
			rate := float64(issued) / drained.Seconds()
			b.ReportMetric(rate, "receipts/s")
			b.ReportMetric(capacity, "capacity/s")
			b.ReportMetric(100*rate/capacity, "%capacity")
		})
	}
}

// simCapacity is how many creates per second conc goroutines get through
// the simulator, each waiting for its answer before the next.
func simCapacity(b *testing.B, s *sim.Sim, conc, n int) float64 {
	c, err := client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: s.URL(), Timeout: 5 * time.Second})
	require.NoError(b, err)
	s.Reset()
	var wg sync.WaitGroup
	for g := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / conc {
				_, err := c.CreateReceipt(context.Background(), []byte(testkit.Receipt(fmt.Sprintf("cap%d-%d", g, i))))
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	span, count := issueSpan(s.Receipts())
	return float64(count) / span.Seconds()
}

// issueSpan is the time from the first issued receipt to the last, and the
// number issued after the first (the intervals that span covers).
func issueSpan(rs []sim.Issued) (time.Duration, int) {
	if len(rs) < 2 {
		return 0, 0
	}
	return rs[len(rs)-1].At.Sub(rs[0].At), len(rs) - 1
}
