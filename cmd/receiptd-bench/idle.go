package main

import (
	"context"
	"time"

	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/sim"
)

// idleResult is what a daemon with nothing to do costs.
type idleResult struct {
	window   time.Duration
	cpu      time.Duration // CPU used over window (schedstat run time)
	switches int64         // context switches over window, all threads
}

func (r idleResult) cpuPerHour() time.Duration {
	return time.Duration(float64(r.cpu) * float64(time.Hour) / float64(r.window))
}

func (r idleResult) wakeupsPerSec() float64 { return float64(r.switches) / r.window.Seconds() }

// runIdle starts a daemon on an empty database with the simulator up,
// lets it settle (start-up, the lookup cache's warm-up, the marker saved
// after its commit), then reads its
// CPU time and context switches before and after window.
func (b *bench) runIdle(ctx context.Context, settle, window time.Duration) (idleResult, error) {
	r := idleResult{window: window}
	s := sim.New(sim.Options{Seed: 1})
	if err := s.Start("127.0.0.1:0"); err != nil {
		return r, err
	}
	defer s.Close()
	cfg, dir, err := b.config(s.URL(), 2)
	if err != nil {
		return r, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return r, err
	}
	fail := func(err error) (idleResult, error) { _ = p.Kill(); return r, err }
	if !clock.Sleep(ctx, settle) {
		return fail(ctx.Err())
	}
	cpu0, err := procRunTime(p.PID)
	if err != nil {
		return fail(err)
	}
	sw0, err := procSwitches(p.PID)
	if err != nil {
		return fail(err)
	}
	if !clock.Sleep(ctx, window) {
		return fail(ctx.Err())
	}
	cpu1, err := procRunTime(p.PID)
	if err != nil {
		return fail(err)
	}
	sw1, err := procSwitches(p.PID)
	if err != nil {
		return fail(err)
	}
	r.cpu, r.switches = cpu1-cpu0, sw1-sw0
	return r, stop(ctx, p)
}
