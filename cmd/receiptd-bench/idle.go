package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/sim"
)

var idleOnlyFlag = flag.Bool("idle-only", false, "run only the idle step: a new daemon's CPU and wake-ups once its start-up is over, and in its start-up minute")

// idleSettle is how long after /readyz a new daemon's start-up proper
// takes: the lookup cache's warm-up, the marker saved 10 s after its
// commit.
const idleSettle = 15 * time.Second

// idleStartup is how long after /readyz a new daemon still does the work
// of a start: the PosAPI watcher reads /rest/info every 10 s until its
// reads span a minute (posapi's minWideSpan: the PosAPI-wide pace of
// lottery numbers is known from then on), then every check_every. The
// idle figures are taken after it; the minute before is reported beside
// them.
const idleStartup = 75 * time.Second

// idleSpan is what a daemon cost over a window.
type idleSpan struct {
	window   time.Duration
	cpu      time.Duration // CPU used over window (schedstat run time)
	switches int64         // context switches over window, all threads
}

func (r idleSpan) cpuPerHour() time.Duration {
	return time.Duration(float64(r.cpu) * float64(time.Hour) / float64(r.window))
}

func (r idleSpan) wakeupsPerSec() float64 { return float64(r.switches) / r.window.Seconds() }

// idleResult is what a daemon with nothing to do costs, and (startup)
// what it cost in the start-up minute before, from idleSettle to
// idleStartup after /readyz.
type idleResult struct {
	idleSpan
	startup idleSpan
}

// procUse is a process's CPU time and context switches so far.
type procUse struct {
	cpu      time.Duration
	switches int64
}

func readProcUse(pid int) (procUse, error) {
	cpu, err := procRunTime(pid)
	if err != nil {
		return procUse{}, err
	}
	sw, err := procSwitches(pid)
	return procUse{cpu, sw}, err
}

func spanBetween(a, b procUse, window time.Duration) idleSpan {
	return idleSpan{window: window, cpu: b.cpu - a.cpu, switches: b.switches - a.switches}
}

// runIdle starts a daemon on an empty database with the simulator up and
// reads its CPU time and context switches at idleSettle, at idleStartup
// and window after that.
func (b *bench) runIdle(ctx context.Context, window time.Duration) (idleResult, error) {
	var r idleResult
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
	ready := time.Now()
	var at [3]procUse
	for i, until := range []time.Duration{idleSettle, idleStartup, idleStartup + window} {
		if !clock.Sleep(ctx, time.Until(ready.Add(until))) {
			return fail(ctx.Err())
		}
		if at[i], err = readProcUse(p.PID); err != nil {
			return fail(err)
		}
	}
	r.startup = spanBetween(at[0], at[1], idleStartup-idleSettle)
	r.idleSpan = spanBetween(at[1], at[2], window)
	return r, stop(ctx, p)
}

// idleOnly runs the idle step alone: its two rows of the table.
func (b *bench) idleOnly(ctx context.Context, o options) error {
	var r results
	var err error
	if r.idle, err = b.runIdle(ctx, o.idleFor); err != nil {
		return err
	}
	printTable(r.idleRows())
	fmt.Println(idleNote(r.idle))
	return nil
}

// idleNote says how the idle rows were measured.
func idleNote(r idleResult) string {
	return fmt.Sprintf("- idle: a new daemon, simulator up, from %s after /readyz (its start-up over: the lookup cache's warm-up,\n"+
		"  the marker saved 10 s after its commit, and the PosAPI watcher's first minute of /rest/info every 10 s), CPU\n"+
		"  (run time summed over /proc/PID/task/*/schedstat) and context switches (voluntary+nonvoluntary, summed over\n"+
		"  /proc/PID/task/*/status) over %s; \"start-up minute\": the same from %s to %s after /readyz.",
		idleStartup, r.window, idleSettle, idleStartup)
}
