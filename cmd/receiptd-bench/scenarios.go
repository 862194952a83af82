package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// acceptLevels are the concurrent client counts of the accept benchmark.
var acceptLevels = []int{1, 16, 64}

// runAccept measures POST /rest/receipt with the upstream down, so every
// answer is a durable 202 and no upstream time is included.
func (b *bench) runAccept(ctx context.Context, d time.Duration) ([]acceptResult, error) {
	s, err := startDownSim()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	cfg, dir, err := b.config(s.URL(), 2)
	if err != nil {
		return nil, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	c := newClient()
	var out []acceptResult
	for _, n := range acceptLevels {
		if _, err := measureAccept(ctx, c, p.URL(), n, d/10, fmt.Sprintf("warm%d", n)); err != nil {
			_ = p.Kill()
			return nil, err
		}
		cpu0, cpuErr := procCPU(p.PID)
		f0, r0, logErr := logCounters(ctx, c, p.URL())
		r, err := measureAccept(ctx, c, p.URL(), n, d, fmt.Sprintf("c%d", n))
		if err != nil {
			_ = p.Kill()
			return nil, err
		}
		cpu1, err := procCPU(p.PID)
		if r.cpu = -1; cpuErr == nil && err == nil {
			r.cpu = cpu1 - cpu0
		}
		if f1, r1, err := logCounters(ctx, c, p.URL()); logErr == nil && err == nil && f1 > f0 {
			r.group = (r1 - r0) / (f1 - f0)
		}
		out = append(out, r)
	}
	return out, stop(ctx, p)
}

// startDownSim starts a simulator that is down: every receipt posted to
// a daemon on it is answered with a durable 202, and no upstream time is
// in the accept figures.
func startDownSim() (*sim.Sim, error) {
	s := sim.New(sim.Options{Seed: 1})
	if err := s.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	if err := s.SetFaults(sim.Faults{Down: true}); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// drainResult is the drain rate at one sync.concurrency beside the
// simulator's capacity at the same concurrency and latency.
type drainResult struct {
	conc     int
	n        int
	drain    float64 // receipts issued per second while receiptd drained
	capacity float64 // receipts issued per second to a plain client loop
}

// issueRate is the simulator's issue rate over rs: receipts after the first
// per second between the first and the last.
func issueRate(rs []sim.Issued) float64 {
	if len(rs) < 2 {
		return 0
	}
	span := rs[len(rs)-1].At.Sub(rs[0].At)
	if span <= 0 {
		return 0
	}
	return float64(len(rs)-1) / span.Seconds()
}

// simCapacity posts receipts straight to the simulator from conc goroutines
// for d and returns its issue rate.
func simCapacity(ctx context.Context, s *sim.Sim, conc int, d time.Duration) (float64, error) {
	c := newClient()
	deadline := time.Now().Add(d)
	var seq atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if err := postReceipt(ctx, c, s.URL(), fmt.Sprintf("cap-%07d", seq.Add(1))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("simulator capacity: %w", err)
	}
	return issueRate(s.Receipts()), nil
}

// runDrain measures, at sync.concurrency conc and a fixed upstream latency,
// how fast receiptd drains a backlog of about d's worth of receipts.
func (b *bench) runDrain(ctx context.Context, conc int, latency, d time.Duration) (drainResult, error) {
	s := sim.New(sim.Options{Seed: 1, Latency: latency})
	if err := s.Start("127.0.0.1:0"); err != nil {
		return drainResult{}, err
	}
	defer s.Close()
	capacity, err := simCapacity(ctx, s, conc, d)
	if err != nil {
		return drainResult{}, err
	}
	n := max(50, int(capacity*d.Seconds()))
	s.Reset()
	cfg, dir, err := b.config(s.URL(), conc)
	if err != nil {
		return drainResult{}, err
	}
	if _, err := writeBacklog(ctx, cfg.DataDir, n); err != nil {
		return drainResult{}, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return drainResult{}, err
	}
	if err := waitSent(ctx, p, n, 10*d+30*time.Second); err != nil {
		_ = p.Kill()
		return drainResult{}, err
	}
	return drainResult{conc: conc, n: n, drain: issueRate(s.Receipts()), capacity: capacity}, stop(ctx, p)
}

// waitSent polls /receiptd/status until n entries are sent.
func waitSent(ctx context.Context, p *harness.Process, n int, limit time.Duration) error {
	c := newClient()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		counts, err := statusCounts(ctx, c, p.URL())
		if err != nil {
			return err
		}
		if counts["sent"] >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("drain: %d receipts not all sent within %s", n, limit)
}

// lookupResult is cached lookup latency beside a bare /healthz round trip.
type lookupResult struct {
	lookup, healthz sample
}

func (b *bench) runLookup(ctx context.Context, n int) (lookupResult, error) {
	s := sim.New(sim.Options{Seed: 1})
	if err := s.Start("127.0.0.1:0"); err != nil {
		return lookupResult{}, err
	}
	defer s.Close()
	cfg, dir, err := b.config(s.URL(), 2)
	if err != nil {
		return lookupResult{}, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return lookupResult{}, err
	}
	r, err := measureLookup(ctx, p.URL(), n)
	if err != nil {
		_ = p.Kill()
		return lookupResult{}, err
	}
	return r, stop(ctx, p)
}

func measureLookup(ctx context.Context, base string, n int) (lookupResult, error) {
	c := newClient()
	url := base + "/api/info/check/getBranchInfo"
	for i := 0; ; i++ { // warm-up: until the answer comes from the cache
		resp, err := c.Get(url)
		if err != nil {
			return lookupResult{}, fmt.Errorf("lookup warm-up: %w", err)
		}
		_ = resp.Body.Close()
		if resp.Header.Get("X-Cache") == "HIT" && i >= 20 {
			break
		}
		if i > 200 {
			return lookupResult{}, fmt.Errorf("lookup warm-up: still X-Cache %q", resp.Header.Get("X-Cache"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	var r lookupResult
	var err error
	if r.lookup, err = getTimed(ctx, c, url, n, true); err != nil {
		return r, err
	}
	r.healthz, err = getTimed(ctx, c, base+"/healthz", n, false)
	return r, err
}
