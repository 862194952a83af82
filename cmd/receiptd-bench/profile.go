package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
)

var (
	floorProfile = flag.String("floor-profile", "",
		"write CPU profiles and execution traces of one client posting to receiptd (in process) and to the naive server into this directory, then stop")
	profileClients = flag.Int("profile-clients", 1, "with -floor-profile: concurrent clients")
)

// profileFloor runs receiptd in this process (daemon.New and Run, as
// cmd/receiptd does, logging off) and the naive server, and records a CPU
// profile and an execution trace of one client posting to each for
// o.acceptFor: cpu-receiptd.pprof, trace-receiptd.out, cpu-naive.pprof,
// trace-naive.out, and the allocations so far (allocs-*.pprof); then it
// prints where each microsecond of one receipt goes, from each trace
// (phases.go). Client and server share the process, so the profiles hold
// both: `go tool pprof -focus 'net/http.\(\*conn\).serve'` keeps the
// server's side.
func (b *bench) profileFloor(ctx context.Context, o options, out string) (err error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	s, err := startDownSim()
	if err != nil {
		return err
	}
	defer s.Close()
	cfg, _, err := b.config(s.URL(), 2)
	if err != nil {
		return err
	}
	d, stopDaemon, err := runInProcess(ctx, cfg)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer func() { err = errors.Join(err, stopDaemon()) }()
	n, err := startNaive(b.dir, false)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, n.close()) }()
	c := newClient()
	for _, t := range []struct{ name, url string }{{"receiptd", d.URL()}, {"naive", n.url}} {
		if _, err := measureAccept(ctx, c, t.url, *profileClients, time.Second, "prof-warm-"+t.name); err != nil {
			return err
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		cpu0, cpuErr := procCPU(os.Getpid())
		r, err := profiled(filepath.Join(out, t.name), func() (acceptResult, error) {
			return measureAccept(ctx, c, t.url, *profileClients, o.acceptFor, "prof-"+t.name)
		})
		if err != nil {
			return err
		}
		cpu1, err := procCPU(os.Getpid())
		runtime.ReadMemStats(&m1)
		n := uint64(max(1, len(r.lat)))
		cpu := "n/a"
		if cpuErr == nil && err == nil {
			cpu = fmt.Sprintf("%d µs", (cpu1-cpu0).Microseconds()/int64(n))
		}
		fmt.Printf("%s: %d receipts in %s from %d client(s), p50 %s / p99 %s; per receipt (client and server, profiler on): "+
			"CPU %s, %d allocations, %d bytes allocated: %s/cpu-%s.pprof, %s/trace-%s.out\n",
			t.name, len(r.lat), o.acceptFor, *profileClients, ms(r.lat.p50()), ms(r.lat.p99()), cpu,
			(m1.Mallocs-m0.Mallocs)/n, (m1.TotalAlloc-m0.TotalAlloc)/n, out, t.name, out, t.name)
	}
	return printFloorPhases(os.Stdout, out) // phases.go
}

// profiled runs fn with the CPU profiler and the execution tracer on,
// writing cpu-<base>.pprof and trace-<base>.out beside base.
func profiled(base string, fn func() (acceptResult, error)) (acceptResult, error) {
	dir, name := filepath.Dir(base), filepath.Base(base)
	cpu, err := os.Create(filepath.Join(dir, "cpu-"+name+".pprof"))
	if err != nil {
		return acceptResult{}, fmt.Errorf("profile: %w", err)
	}
	defer cpu.Close()
	tr, err := os.Create(filepath.Join(dir, "trace-"+name+".out"))
	if err != nil {
		return acceptResult{}, fmt.Errorf("profile: %w", err)
	}
	defer tr.Close()
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return acceptResult{}, fmt.Errorf("profile: %w", err)
	}
	if err := trace.Start(tr); err != nil {
		pprof.StopCPUProfile()
		return acceptResult{}, fmt.Errorf("profile: trace: %w", err)
	}
	r, err := fn()
	trace.Stop()
	pprof.StopCPUProfile()
	if err != nil {
		return r, err
	}
	// The allocations since the process began (both targets and their
	// warm-ups): `go tool pprof -sample_index=alloc_space -focus ...`.
	heap, err := os.Create(filepath.Join(dir, "allocs-"+name+".pprof"))
	if err != nil {
		return r, fmt.Errorf("profile: %w", err)
	}
	defer heap.Close()
	if err := pprof.Lookup("allocs").WriteTo(heap, 0); err != nil {
		return r, fmt.Errorf("profile: allocs: %w", err)
	}
	return r, errors.Join(cpu.Close(), tr.Close(), heap.Close())
}

// runInProcess runs a daemon on cfg in this process, logging off, as
// cmd/receiptd does, for the traced and profiled windows; stop ends its
// Run and returns Run's error.
func runInProcess(ctx context.Context, cfg config.Config) (d *daemon.Daemon, stop func() error, err error) {
	d, err = daemon.New(cfg, zap.NewNop(), "bench")
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(rctx) }()
	return d, func() error { cancel(); return <-done }, nil
}
