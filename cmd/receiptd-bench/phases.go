package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// The phases of one receipt: docs/performance.md, "One receipt at the
// floor". An execution trace written by -floor-profile (one client) is read
// with golang.org/x/exp/trace; every goroutine that made a log fdatasync (the
// connections' goroutines; the naive server's own fdatasync counts as its
// log's) is followed, and its time is summed per receipt: running before and
// after the fdatasync, runnable without a CPU, in each kind of syscall, and
// waiting inside a request; and the log fdatasyncs that overlapped one of the
// database's are counted. Means per receipt: the trace's own overhead is in
// the running figures.

// -phases is a command of its own, run when the flag is parsed: it reads
// one file, so it needs none of main's work (building receiptd, a scratch
// directory), and main.go need not know of it.
var phasesFile = flag.String("phases", "", "print where each microsecond of one receipt goes, from an execution trace written by "+
	"-floor-profile (`TRACEFILE`: DIR/trace-receiptd.out or DIR/trace-naive.out), then stop")

// syscallKind is what a syscall did, told from the functions on its stack.
type syscallKind string

const (
	kindWALSync  syscallKind = "wal-fdatasync"
	kindDBSync   syscallKind = "db-fdatasync"
	kindSync     syscallKind = "other-fdatasync"
	kindWALWrite syscallKind = "wal-pwrite"
	kindAnswer   syscallKind = "answer-write"
	kindRead     syscallKind = "read"
	kindOther    syscallKind = "other-syscall"
)

// phaseRules name, by substrings of function names on a syscall's stack,
// what the syscall did. The first rule that matches wins, in the order of
// the fields.
type phaseRules struct {
	sync     []string // an fdatasync
	walSync  []string // with sync: the log's
	dbSync   []string // with sync: the database's
	walWrite []string // the log's write
	answer   []string // the write of the answer
	read     []string // a read (of the request)
}

// floorRules are receiptd's and the naive server's: the rules of the
// Python script (phases.py) this file replaced, so that tables from before
// the port mean the same.
var floorRules = phaseRules{
	sync:     []string{"Fdatasync"},
	walSync:  []string{"wal.datasync", "naiveServer"},
	dbSync:   []string{"bbolt"},
	walWrite: []string{"wal.(*Log).write", "naiveServer"},
	answer:   []string{"response).finishRequest", "bufio.(*Writer).Flush"},
	read:     []string{"syscall.read", "Read"},
}

// onStack reports whether a function on the stack (funcs) has one of subs
// in its name.
func onStack(funcs, subs []string) bool {
	return slices.ContainsFunc(funcs, func(f string) bool {
		return slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(f, s) })
	})
}

// stackFuncs appends the function names of st's stack to buf[:0].
func stackFuncs(buf []string, st trace.StateTransition) []string {
	buf = buf[:0]
	for f := range st.Stack.Frames() {
		buf = append(buf, f.Func)
	}
	return buf
}

// kind classifies a syscall by the functions on its stack.
func (r phaseRules) kind(funcs []string) syscallKind {
	has := func(subs []string) bool { return onStack(funcs, subs) }
	switch {
	case has(r.sync) && has(r.walSync):
		return kindWALSync
	case has(r.sync) && has(r.dbSync):
		return kindDBSync
	case has(r.sync):
		return kindSync
	case has(r.walWrite):
		return kindWALWrite
	case has(r.answer):
		return kindAnswer
	case has(r.read):
		return kindRead
	}
	return kindOther
}

// The rows of the table.
const (
	phaseRunBefore = "running, before the log write: read, parse, check, encode, append"
	phaseRunAfter  = "running, after the fdatasync: the answer"
	phaseRunnable  = "runnable, waiting for a CPU (hand-offs, a busy machine)"
	phaseWALSync   = "syscall: the log fdatasync"
	phaseWALWrite  = "syscall: the log pwrite"
	phaseAnswer    = "syscall: write of the answer"
	phaseRead      = "syscall: read of the request"
	phaseSysOther  = "syscall: other"
	phaseWaitIn    = "waiting in the handler: " // and the reason
	phaseOthersRun = "(other goroutines running: apply, worker, GC, client)"
)

var syscallPhase = map[syscallKind]string{
	kindWALSync: phaseWALSync, kindWALWrite: phaseWALWrite, kindAnswer: phaseAnswer, kindRead: phaseRead,
}

// interval is a syscall's span, in trace time.
type interval struct{ start, end trace.Time }

// goTrack is one goroutine followed through the trace. Whether it is a
// handler (it made a log fdatasync) is known only at the end, so both of
// its sums are kept.
type goTrack struct {
	state      trace.GoState
	since      trace.Time
	seen       bool
	after      bool // its last log fdatasync has returned, and it has not waited on the network since
	sysKind    syscallKind
	sysStart   trace.Time
	inSyscall  bool
	waitReason string
	handler    bool
	phases     map[string]time.Duration // as a handler
	running    time.Duration            // as another goroutine
}

// phases is what one trace says about its receipts.
type phases struct {
	receipts int // log fdatasyncs by the connections' goroutines
	phase    map[string]time.Duration
	walSyncs []interval
	dbSyncs  []interval
}

// phaseCounter sums the phases of a trace's goroutines, one transition at
// a time, in the trace's order.
type phaseCounter struct {
	gs map[trace.GoID]*goTrack
	p  phases
}

func newPhaseCounter() *phaseCounter {
	return &phaseCounter{gs: map[trace.GoID]*goTrack{}, p: phases{phase: map[string]time.Duration{}}}
}

// readPhases reads an execution trace and sums its receipts' phases,
// classifying syscalls with rules.
func readPhases(r io.Reader, rules phaseRules) (phases, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return phases{}, fmt.Errorf("read trace: %w", err)
	}
	c := newPhaseCounter()
	var funcs []string
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			return c.result(), nil
		}
		if err != nil {
			return phases{}, fmt.Errorf("read trace: %w", err)
		}
		if ev.Kind() != trace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != trace.ResourceGoroutine {
			continue
		}
		from, to := st.Goroutine()
		funcs = funcs[:0]
		if to == trace.GoSyscall {
			funcs = stackFuncs(funcs, st)
		}
		c.step(st.Resource.Goroutine(), ev.Time(), from, to, st.Reason, rules.kind(funcs))
	}
}

// step follows one transition of goroutine id at t: the time since its
// last one goes to the state it leaves. kind is what a syscall it enters
// does.
func (c *phaseCounter) step(id trace.GoID, t trace.Time, from, to trace.GoState, reason string, kind syscallKind) {
	g := c.gs[id]
	if g == nil {
		g = &goTrack{phases: map[string]time.Duration{}}
		c.gs[id] = g
	}
	if g.seen {
		g.add(t.Sub(g.since))
	}
	if to == trace.GoSyscall {
		g.sysKind, g.sysStart, g.inSyscall = kind, t, true
	}
	if from == trace.GoSyscall && g.inSyscall {
		switch g.sysKind {
		case kindWALSync:
			c.p.walSyncs = append(c.p.walSyncs, interval{g.sysStart, t})
			g.after, g.handler = true, true
		case kindDBSync:
			c.p.dbSyncs = append(c.p.dbSyncs, interval{g.sysStart, t})
		}
		g.inSyscall = false
	}
	if to == trace.GoWaiting {
		g.waitReason = reason
		if reason == "network" {
			g.after = false
		}
	}
	g.state, g.since, g.seen = to, t, true
}

// result adds up the goroutines: the handlers' phases, and the others'
// running time. It is called once, after the last step.
func (c *phaseCounter) result() phases {
	p := c.p
	for _, g := range c.gs {
		if !g.handler {
			if g.running > 0 {
				p.phase[phaseOthersRun] += g.running
			}
			continue
		}
		for k, d := range g.phases {
			p.phase[k] += d
		}
	}
	p.receipts = len(p.walSyncs)
	return p
}

// add gives d to the state g is leaving, in both of its sums.
func (g *goTrack) add(d time.Duration) {
	switch g.state {
	case trace.GoRunning:
		g.running += d
		if g.after {
			g.phases[phaseRunAfter] += d
		} else {
			g.phases[phaseRunBefore] += d
		}
	case trace.GoRunnable:
		g.phases[phaseRunnable] += d
	case trace.GoSyscall:
		k, ok := syscallPhase[g.sysKind]
		if !ok {
			k = phaseSysOther
		}
		g.phases[k] += d
	case trace.GoWaiting:
		if g.waitReason != "network" {
			g.phases[phaseWaitIn+g.waitReason] += d
		}
	}
}

// printFloorPhases prints the tables of both traces -floor-profile wrote
// into dir.
func printFloorPhases(w io.Writer, dir string) error {
	for _, name := range []string{"receiptd", "naive"} {
		file := filepath.Join(dir, "trace-"+name+".out")
		fmt.Fprintf(w, "\nWhere each microsecond of one receipt goes, %s (receiptd-bench -phases %s):\n", name, file)
		if err := printPhasesFile(w, file, floorRules); err != nil {
			return err
		}
	}
	return nil
}

// printPhasesFile prints the table of the trace in file.
func printPhasesFile(w io.Writer, file string, rules phaseRules) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("phases: %w", err)
	}
	defer f.Close()
	p, err := readPhases(f, rules)
	if err != nil {
		return fmt.Errorf("phases of %s: %w", file, err)
	}
	p.print(w)
	return nil
}

// print writes the table: each phase's mean per receipt, the largest first,
// and the log fdatasyncs' durations and overlaps with the database's.
func (p phases) print(w io.Writer) {
	n := max(p.receipts, 1)
	perReceipt := func(d time.Duration) string { return fmt.Sprintf("%8.1f µs", float64(d)/float64(n)/1e3) }
	fmt.Fprintf(w, "receipts (log fdatasyncs by connection goroutines): %d\n", p.receipts)
	keys := make([]string, 0, len(p.phase))
	var sum time.Duration
	for k, d := range p.phase {
		keys = append(keys, k)
		if !strings.HasPrefix(k, "(") {
			sum += d
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(p.phase[b], p.phase[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		fmt.Fprintf(w, "  %-75s %s\n", k, perReceipt(p.phase[k]))
	}
	fmt.Fprintf(w, "  %-75s %s\n", "sum (without other goroutines)", perReceipt(sum))
	if p.receipts == 0 {
		fmt.Fprintln(w, "no log fdatasync in this trace: was it written by receiptd-bench -floor-profile?")
		return
	}
	durs := make([]time.Duration, len(p.walSyncs))
	var total, dbBusy time.Duration
	overlapped := 0
	for i, s := range p.walSyncs {
		durs[i] = s.end.Sub(s.start)
		total += durs[i]
		if slices.ContainsFunc(p.dbSyncs, func(d interval) bool { return d.start < s.end && d.end > s.start }) {
			overlapped++
		}
	}
	for _, d := range p.dbSyncs {
		dbBusy += d.end.Sub(d.start)
	}
	fmt.Fprintf(w, "log fdatasync: median %.1f µs, mean %.1f µs; %d (%.1f%%) overlapped one of the database's %d fdatasyncs (%.0f ms busy)\n",
		float64(median(durs))/1e3, float64(total)/float64(len(durs))/1e3,
		overlapped, 100*float64(overlapped)/float64(n), len(p.dbSyncs), float64(dbBusy)/1e6)
}
