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
)

// BenchmarkDrain drains a backlog to the simulator answering after a fixed
// 20 ms, at sync.concurrency 1, 2 and 8, and reports the drain rate beside
// the simulator's capacity at that concurrency, measured in the same run
// by a plain loop of creates through the same client:
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
			capacity := simCapacity(b, r.sim.URL(), conc, n)
			var drained time.Duration
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				r.enqueueN(fmt.Sprintf("i%d-", i), n)
				b.StartTimer()
				start := time.Now()
				r.start()
				r.waitSettled(time.Minute)
				drained += time.Since(start)
				r.stop()
			}
			rate := float64(n*b.N) / drained.Seconds()
			b.ReportMetric(rate, "receipts/s")
			b.ReportMetric(capacity, "capacity/s")
			b.ReportMetric(100*rate/capacity, "%capacity")
		})
	}
}

// simCapacity is how many creates per second conc goroutines get through
// the simulator, each waiting for its answer before the next.
func simCapacity(b *testing.B, url string, conc, n int) float64 {
	c, err := client.New(client.Config{BaseURL: url, LookupBaseURL: url, Timeout: 5 * time.Second})
	require.NoError(b, err)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / conc {
				_, err := c.CreateReceipt(context.Background(), []byte(receiptBody(fmt.Sprintf("cap%d-%d", g, i))))
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}
