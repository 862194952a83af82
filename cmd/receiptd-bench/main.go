// Command receiptd-bench measures every speed target of receiptd in one run
// on the current machine and prints one table, each figure beside its
// reference measured in the same run, with the target and PASS or MISS.
//
// It builds cmd/receiptd and runs it as a subprocess (package harness), with
// the tax service simulator (package sim) in process as the upstream:
//
//	go run ./cmd/receiptd-bench          # the full run, about 20 minutes
//	go run ./cmd/receiptd-bench -quick   # shorter windows, noisier (12.5 minutes before the online step's windows at 20 ms grew)
//	go run ./cmd/receiptd-bench -floor-only   # accept against the naive and group-commit servers alone, about 2 minutes (-floor-also BIN: another build beside)
//	go run ./cmd/receiptd-bench -online-only   # the online sale against a forwarding server, and where its time goes, about 4.5 minutes
//	go run ./cmd/receiptd-bench -floor-profile DIR   # CPU profiles and traces of one client
//	go run ./cmd/receiptd-bench -phases DIR/trace-receiptd.out   # where each µs of a receipt goes
//	go run ./cmd/receiptd-bench -switch-only   # switches to a new version under POS load (Linux), about a minute
//	go run ./cmd/receiptd-bench -idle-only   # an idle daemon's CPU and wake-ups (Linux), about two minutes
//
// All data lives under one scratch directory (-dir, default a new temporary
// directory), so the daemon's writes and the raw fsync reference hit the
// same disk. The load average is printed before and after: on a shared
// machine the figures are only as quiet as the machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/receiptd/receiptd/internal/testing/harness"
)

// options are the command's flags.
type options struct {
	dir        string
	keep       bool
	acceptFor  time.Duration
	fsyncN     int
	drainFor   time.Duration
	latency    time.Duration
	lookups    int
	backlog    int
	settle     time.Duration
	idleFor    time.Duration
	drainConcs []int
}

func parseFlags() options {
	var o options
	quick := flag.Bool("quick", false, "shorter run (about 12 minutes on a 2-core machine): shorter windows, fewer samples")
	flag.StringVar(&o.dir, "dir", "", "scratch directory on the disk to measure (default: a new temporary directory)")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch directory")
	flag.DurationVar(&o.acceptFor, "accept-for", 5*time.Second, "measuring window per accept concurrency level")
	flag.IntVar(&o.fsyncN, "fsync-n", 300, "raw fsync'd writes per reference")
	flag.DurationVar(&o.drainFor, "drain-for", 5*time.Second, "capacity window, and the backlog size in seconds of capacity, per drain level")
	flag.DurationVar(&o.latency, "latency", 20*time.Millisecond, "fixed simulator latency for the drain benchmark")
	flag.IntVar(&o.lookups, "lookups", 2000, "timed cached lookups")
	flag.IntVar(&o.backlog, "backlog", 100000, "receipts posted for bytes on disk, memory and time to ready")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "memory sampling window after a fill or a start")
	flag.DurationVar(&o.idleFor, "idle-for", 30*time.Second, "window over which an idle daemon's CPU and wake-ups are counted")
	flag.Parse()
	if *quick {
		o.acceptFor, o.fsyncN, o.drainFor, o.lookups, o.settle = 1500*time.Millisecond, 100, 1500*time.Millisecond, 500, time.Second
		o.backlog, o.idleFor = 20000, 10*time.Second
	}
	o.drainConcs = []int{1, 2, 8}
	return o
}

func main() {
	if dir := os.Getenv(naiveEnv); dir != "" {
		serveNaiveProcess(dir) // naive.go: this process is the naive server
	}
	if os.Getenv(simEnv) == "1" {
		serveSimProcess() // online.go: this process is the simulator
	}
	if dir := os.Getenv(forwardEnv); dir != "" {
		serveForwardProcess(dir, os.Getenv(forwardToEnv)) // online.go: the forwarding reference
	}
	o := parseFlags()
	if *phasesFile != "" { // phases.go: a trace's table, nothing built or run
		if err := printPhasesFile(os.Stdout, *phasesFile, floorRules); err != nil {
			fmt.Fprintln(os.Stderr, "receiptd-bench:", err)
			os.Exit(1)
		}
		return
	}
	if *onlinePhasesFile != "" { // onlinephases.go: an online trace's table
		if err := printOnlinePhasesFile(os.Stdout, *onlinePhasesFile, 0); err != nil {
			fmt.Fprintln(os.Stderr, "receiptd-bench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "receiptd-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "receiptd-bench-")
		if err != nil {
			return err
		}
		dir = d
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	started, loadBefore := time.Now(), loadAvg()
	bin, err := harness.Build(ctx, dir)
	if err != nil {
		return err
	}
	b := &bench{bin: bin, dir: dir}
	if snapshotFlags.only {
		return b.snapshotOnly(ctx, o)
	}
	if *fleetOnly {
		fmt.Printf("load average before: %s\n", loadBefore)
		return b.pairedOnly(ctx, o) // fleet.go: push on against off, interleaved
	}
	if switchFlags.only {
		return b.switchOnly(ctx) // switch.go: 1.0.0 to 1.1.0 under POS load, by offer and by update apply
	}
	if *controlOnly {
		return b.controlOnlyStep(ctx, o) // control.go: idle with [control] on
	}
	if *idleOnlyFlag {
		return b.idleOnly(ctx, o) // idle.go: an idle daemon after its start-up
	}
	if *floorProfile != "" {
		return b.profileFloor(ctx, o, *floorProfile) // profile.go: CPU profiles and traces at 1 client
	}
	if *floorOnly {
		return b.floorOnlyRun(ctx, o) // floor.go: accept against the naive server, alternating windows
	}
	if *onlineOnly {
		return b.onlineOnlyRun(ctx, o) // online.go: the online sale against a forwarding server, and its phases
	}
	if *yearN > 0 {
		return b.yearStep(ctx, o) // year.go: the year on a till, alone
	}
	if *fillOnly {
		return b.fillOnlyRun(ctx, o) // fill.go: bytes on disk and memory after a fill, alone
	}
	res, err := b.measureAll(ctx, o)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	fmt.Printf("receiptd-bench %s on %s (%s/%s, %d CPUs), scratch dir %s\n",
		started.UTC().Format(time.RFC3339), host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), dir)
	fmt.Printf("load average before: %s, after: %s; took %s\n\n", loadBefore, loadAvg(), time.Since(started).Round(time.Second))
	printTable(res.rows(o))
	fmt.Println()
	fmt.Println(res.notes(o))
	fmt.Println()
	fmt.Println("Accept at the floor: receiptd against the naive durable server, alternating windows, the median of the rounds' ratios:")
	for _, f := range res.floor {
		fmt.Println(f.report())
	}
	fmt.Println(res.syncKinds.report())
	fmt.Println()
	fmt.Println("The online sale: receiptd against a durable forwarding server and the simulator, alternating windows:")
	for _, l := range res.online {
		fmt.Println(l.report())
	}
	fmt.Println()
	fmt.Print(res.fleet.report(res))
	fmt.Print(res.control.report(res))
	fmt.Println()
	fmt.Print(res.switchRes.report())
	return nil
}

// results is everything measured.
type results struct {
	fsync     rawFsync
	enqueue   sample // queue.Enqueue without HTTP, one writer
	accept    []acceptResult
	drain     []drainResult
	lookup    lookupResult
	empty     startResult
	fill      fillResult
	idle      idleResult
	snap      snapshotResult
	fleet     fleetResult
	control   controlResult
	switchRes switchResult  // one switch by offer and one by update apply
	floor     []floorLevel  // accept against the naive server, alternating windows
	online    []onlineLevel // the online sale against the forwarding server
	syncKinds syncKinds     // fdatasync after an append and over a file made beforehand
}

func (b *bench) measureAll(ctx context.Context, o options) (results, error) {
	var r results
	var err error
	step := func(name string) { fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), name) }
	step("raw fsync reference")
	if r.fsync, err = measureFsync(b.dir, o.fsyncN); err != nil {
		return r, err
	}
	step("accept against the naive durable server at 1 and 64 clients, alternating windows")
	if r.floor, r.syncKinds, err = b.runFloor(ctx, o); err != nil {
		return r, err
	}
	step("the online sale against a durable forwarding server and the simulator, alternating windows")
	if r.online, err = b.runOnline(ctx, o); err != nil {
		return r, err
	}
	step("queue.Enqueue reference")
	if r.enqueue, err = measureEnqueue(ctx, b.dir, o.fsyncN); err != nil {
		return r, err
	}
	step("accept at 1, 16, 64 clients")
	if r.accept, err = b.runAccept(ctx, o.acceptFor); err != nil {
		return r, err
	}
	for _, c := range o.drainConcs {
		step(fmt.Sprintf("drain at sync.concurrency %d", c))
		d, err := b.runDrain(ctx, c, o.latency, o.drainFor)
		if err != nil {
			return r, err
		}
		r.drain = append(r.drain, d)
	}
	step("cached lookup")
	if r.lookup, err = b.runLookup(ctx, o.lookups); err != nil {
		return r, err
	}
	step("start with an empty database")
	if r.empty, err = b.runStart(ctx, 0, o.settle); err != nil {
		return r, err
	}
	step(fmt.Sprintf("post %d receipts from 64 clients, restart", o.backlog))
	if r.fill, err = b.runFill(ctx, o.backlog, o.settle); err != nil {
		return r, err
	}
	step(fmt.Sprintf("accept at %d clients on %d entries, without and with snapshots", snapshotFlags.clients, o.backlog))
	if r.snap, err = b.runSnapshot(ctx, o); err != nil {
		return r, err
	}
	step(fmt.Sprintf("idle daemon, upstream up, %s", o.idleFor))
	if r.idle, err = b.runIdle(ctx, o.idleFor); err != nil {
		return r, err
	}
	step("fleet push: accept with the head office down, idle with it up")
	if r.fleet, err = b.runFleet(ctx, o); err != nil {
		return r, err
	}
	step("control: idle with [control] on, over WebSocket and HTTP polling")
	if r.control, err = b.runControl(ctx, o); err != nil {
		return r, err
	}
	// One round each way (about 25 s with the two builds); -switch-only
	// runs -switch-rounds of them.
	if runtime.GOOS != "linux" {
		return r, nil // the switch is built on Linux only; its report says so
	}
	step("switch to a new version under POS load, by offer and by update apply")
	r.switchRes, err = b.runSwitch(ctx, 1)
	return r, err
}
