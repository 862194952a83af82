package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"

	"github.com/receiptd/receiptd/internal/syncer"
)

// Where each microsecond of an online sale goes. The API and the sync
// worker mark each step of a sale in an execution trace
// (syncer.TracePhase); a trace of one client's online sales is read
// with golang.org/x/exp/trace, and each sale's time between one mark and
// the next goes to the phase that ends at the later mark. The time
// outside the handler (the client's write, net/http reading the request
// before the handler, flushing the answer after it, the client's read)
// is the client's mean latency less the handler's mean span.

var onlineTraceLatency = flag.Duration("online-trace-latency", 0, "with -online-only: the simulator's latency during the traced window")

var onlinePhasesFile = flag.String("online-phases", "", "print where each microsecond of an online sale goes, from an execution trace "+
	"written by -online-only (`TRACEFILE`: its trace-online.out), then stop")

// onlinePoints are the marks of a sale in their order, each with the
// phase that ends at it. A mark a build does not make is skipped: its
// time goes to the next phase.
var onlinePoints = []struct{ mark, phase string }{
	{"request", ""},
	{"enqueued", "accept: parse, check, idempotency, the log record and its fdatasync"},
	{"claimed", "hand-off to the sync worker (the accept carries the claim; else its wake-up and the claim's commit)"},
	{"send", "the send's goroutine starting"},
	{"answer", "the send: sendData gate, its connection (the last create's, or dialed during the accept), the request, the tax service, its answer"},
	{"recorded", "recording the outcome (its log record written; its flush follows the answer)"},
	{"published", "handing the answer to the mailbox"},
	{"awaited", "hand-back: the waiting request wakes"},
	{"answered", "the answer: the upstream's body into the response"},
}

// onlinePhases is what a trace says about its sales.
type onlinePhases struct {
	sales   int
	phase   map[string]time.Duration // sums over the complete sales
	handler time.Duration            // request to answered, summed
	// slow is phase and handler over the slowest 1% of the sales (by
	// their handler's time), at least one: where the tail goes.
	slow        map[string]time.Duration
	slowHandler time.Duration
	slowSales   int
	// Each sale's handler time, by how it was sent: by the request that
	// accepted it (its attempt's marks on the accept's goroutine:
	// Slot.SendHere), or from a goroutine (the accept could not send it
	// itself: no free send slot, older receipts to send first).
	here, goroutine sample
	// Of the slowest 1%: how many had a database commit (the apply
	// loop's: its page writes and fdatasyncs, a syscall with bbolt on its
	// stack) running during their accept, or during their send, how many
	// a new segment of the log during their accept (a syscall with
	// walSegment on its stack: the roll's header, rename and directory
	// fsync, or a spare written as zeros), and how many a garbage
	// collection's mark phase during the sale.
	slowDBAccept, slowDBSend, slowSegment, slowGC int
	// where and slowWhere split the handler's time by what its goroutine
	// was doing (whereStates), over all sales and over the slowest 1%.
	where, slowWhere map[string]time.Duration
}

// whereStates are the states of a sale's handler goroutine between its
// request and answered marks, in the order printed.
var whereStates = []string{
	"running: receiptd's own CPU",
	"runnable: waiting for a core",
	"in a syscall of the log's: its writes, fdatasyncs, a new segment",
	"in another syscall: the network's reads and writes",
	"waiting for the network: the tax service's answer",
	"waiting for anything else: a flush running, a lock, a channel, a timer",
}

// whereOf is the whereStates entry of a goroutine entering state to
// (funcs: its stack, for a syscall).
func whereOf(to trace.GoState, reason string, funcs []string) string {
	switch {
	case to == trace.GoRunning:
		return whereStates[0]
	case to == trace.GoRunnable:
		return whereStates[1]
	case to == trace.GoSyscall && onStack(funcs, walPackage):
		return whereStates[2]
	case to == trace.GoSyscall:
		return whereStates[3]
	case to == trace.GoWaiting && reason == "network":
		return whereStates[4]
	}
	return whereStates[5]
}

// walPackage is the log's package: a syscall with it on the stack is the
// log's. walSegment are the log's functions that make a new segment.
var (
	walPackage = []string{"internal/wal."}
	walSegment = []string{"wal.(*Log).roll", "wal.(*Log).ensureSpare"}
)

// readOnlinePhases reads the sale marks of an execution trace.
func readOnlinePhases(r io.Reader) (onlinePhases, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return onlinePhases{}, fmt.Errorf("read trace: %w", err)
	}
	request := map[trace.GoID]trace.Time{}      // a handler's request mark, until its enqueued mark
	marks := map[string]map[string]trace.Time{} // queueId → mark → time
	apart := map[string]bool{}                  // queueId → its attempt ran on another goroutine than its accept
	accepted := map[string]trace.GoID{}         // queueId → the goroutine of its accept
	var order []string
	var dbCommits, segments, gcs []interval
	type inSyscall struct {
		since trace.Time
		into  *[]interval // dbCommits or segments
	}
	syscalls := map[trace.GoID]inSyscall{} // a goroutine in a syscall of the database's or of a new segment's
	type gState struct {
		where string
		since trace.Time
	}
	state := map[trace.GoID]gState{}                      // each goroutine's whereOf since its last transition
	handling := map[trace.GoID]map[string]time.Duration{} // a handler's split since its request mark, until answered
	split := map[string]map[string]time.Duration{}        // queueId → its handler's split
	account := func(g trace.GoID, now trace.Time) {
		if acc := handling[g]; acc != nil {
			st := state[g]
			acc[st.where] += now.Sub(st.since)
			state[g] = gState{st.where, now}
		}
	}
	var gcFrom trace.Time
	var funcs []string
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return onlinePhases{}, fmt.Errorf("read trace: %w", err)
		}
		switch ev.Kind() {
		case trace.EventRangeBegin, trace.EventRangeEnd:
			if !strings.HasPrefix(ev.Range().Name, "GC concurrent mark") {
				continue
			}
			if ev.Kind() == trace.EventRangeBegin {
				gcFrom = ev.Time()
			} else if gcFrom != 0 {
				gcs = append(gcs, interval{gcFrom, ev.Time()})
			}
			continue
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			from, to := st.Goroutine()
			account(g, ev.Time())
			if to == trace.GoSyscall {
				funcs = stackFuncs(funcs, st)
			}
			state[g] = gState{whereOf(to, st.Reason, funcs), ev.Time()}
			if to == trace.GoSyscall {
				// Any syscall of the database's (floorRules.dbSync), its
				// page writes as well as its fdatasyncs.
				if onStack(funcs, floorRules.dbSync) {
					syscalls[g] = inSyscall{ev.Time(), &dbCommits}
				} else if onStack(funcs, walSegment) {
					syscalls[g] = inSyscall{ev.Time(), &segments}
				}
			} else if s, ok := syscalls[g]; ok && from == trace.GoSyscall {
				*s.into = addSyscall(*s.into, interval{s.since, ev.Time()})
				delete(syscalls, g)
			}
			continue
		}
		if ev.Kind() != trace.EventLog || ev.Log().Category != syncer.TraceCategory {
			continue
		}
		mark, id, _ := strings.Cut(ev.Log().Message, " ")
		if mark == "request" {
			request[ev.Goroutine()] = ev.Time()
			handling[ev.Goroutine()] = map[string]time.Duration{}
			state[ev.Goroutine()] = gState{whereStates[0], ev.Time()}
			continue
		}
		switch g := ev.Goroutine(); {
		case mark == "enqueued" && handling[g] != nil:
			split[id] = handling[g]
		case mark == "answered" && handling[g] != nil:
			account(g, ev.Time())
			delete(handling, g)
		}
		m := marks[id]
		if m == nil {
			m = map[string]trace.Time{}
			marks[id] = m
			order = append(order, id)
		}
		if _, seen := m[mark]; seen {
			continue // a second attempt: the first one's marks stand
		}
		m[mark] = ev.Time()
		switch mark {
		case "answer":
			apart[id] = accepted[id] != ev.Goroutine()
		case "enqueued":
			accepted[id] = ev.Goroutine()
			if t, ok := request[ev.Goroutine()]; ok {
				m["request"] = t
				delete(request, ev.Goroutine())
			}
		}
	}
	p := onlinePhases{phase: map[string]time.Duration{}, slow: map[string]time.Duration{},
		where: map[string]time.Duration{}, slowWhere: map[string]time.Duration{}}
	type sale struct {
		handler time.Duration
		phase   map[string]time.Duration
		marks   map[string]trace.Time
		where   map[string]time.Duration
	}
	var sales []sale
	for _, id := range order {
		m := marks[id]
		first, okF := m["request"]
		last, okL := m["answered"]
		if !okF || !okL {
			continue // not a whole sale within the trace, or not answered with the upstream's answer
		}
		s := sale{handler: last.Sub(first), phase: map[string]time.Duration{}, marks: m, where: split[id]}
		if apart[id] {
			p.goroutine = append(p.goroutine, s.handler)
		} else {
			p.here = append(p.here, s.handler)
		}
		prev := first
		for _, pt := range onlinePoints[1:] {
			t, ok := m[pt.mark]
			if !ok {
				continue
			}
			s.phase[pt.phase] += t.Sub(prev)
			prev = t
		}
		sales = append(sales, s)
	}
	add := func(sum, where map[string]time.Duration, handler *time.Duration, s sale) {
		*handler += s.handler
		for ph, d := range s.phase {
			sum[ph] += d
		}
		for st, d := range s.where {
			where[st] += d
		}
	}
	for _, s := range sales {
		add(p.phase, p.where, &p.handler, s)
	}
	p.sales = len(sales)
	slices.SortFunc(sales, func(a, b sale) int { return cmp.Compare(b.handler, a.handler) })
	p.slowSales = min(len(sales), max(1, len(sales)/100))
	for _, s := range sales[:p.slowSales] {
		add(p.slow, p.slowWhere, &p.slowHandler, s)
		m := s.marks
		if overlaps(dbCommits, m["request"], m["enqueued"]) {
			p.slowDBAccept++
		}
		if overlaps(dbCommits, m["claimed"], m["answer"]) {
			p.slowDBSend++
		}
		if overlaps(segments, m["request"], m["enqueued"]) {
			p.slowSegment++
		}
		if overlaps(gcs, m["request"], m["answered"]) {
			p.slowGC++
		}
	}
	return p, nil
}

// commitGap is the most time between two syscalls of one event (a
// commit's page writes, a few µs apart, then its fdatasyncs; a new
// segment's header write, fdatasync, rename and directory fsync).
const commitGap = 500 * time.Microsecond

// addSyscall adds a syscall to the events: to the last one when it
// starts within commitGap of that one's end, else as a new event.
func addSyscall(events []interval, iv interval) []interval {
	if n := len(events); n > 0 && iv.start.Sub(events[n-1].end) <= commitGap {
		events[n-1].end = max(events[n-1].end, iv.end)
		return events
	}
	return append(events, iv)
}

// overlaps reports whether one of ivs runs at some time between from and
// to (false when either is unknown).
func overlaps(ivs []interval, from, to trace.Time) bool {
	if from == 0 || to == 0 {
		return false
	}
	return slices.ContainsFunc(ivs, func(iv interval) bool { return iv.start < to && iv.end > from })
}

// print writes the table: each phase's mean per sale in the order of a
// sale; clientMean, when known, adds the time outside the handler.
func (p onlinePhases) print(w io.Writer, clientMean time.Duration) {
	n, nSlow := float64(max(p.sales, 1)), float64(max(p.slowSales, 1))
	us := func(d time.Duration, n float64) string { return fmt.Sprintf("%8.1f µs", float64(d)/n/1e3) }
	fmt.Fprintf(w, "sales (request to answer, all marks in the trace): %d; each phase's mean over them, and over the slowest 1%% (%d)\n", p.sales, p.slowSales)
	if p.sales == 0 {
		fmt.Fprintln(w, "no whole sale in this trace: was it written by receiptd-bench -online-only?")
		return
	}
	for _, pt := range onlinePoints[1:] {
		if d, ok := p.phase[pt.phase]; ok {
			fmt.Fprintf(w, "  %-90s %s %s\n", pt.phase, us(d, n), us(p.slow[pt.phase], nSlow))
		}
	}
	fmt.Fprintf(w, "  %-90s %s %s\n", "the handler, request to answer", us(p.handler, n), us(p.slowHandler, nSlow))
	fmt.Fprintf(w, "    of the slowest 1%%: %d with a database commit (the apply loop's page writes and fdatasyncs) during the accept, %d during the send; "+
		"%d with a new segment of the log (its header, rename and directory fsync, or a spare of zeros) during the accept; %d with a GC marking\n",
		p.slowDBAccept, p.slowDBSend, p.slowSegment, p.slowGC)
	fmt.Fprintln(w, "    where the handler's goroutine was, request to answer:")
	for _, st := range whereStates {
		fmt.Fprintf(w, "      %-88s %s %s\n", st, us(p.where[st], n), us(p.slowWhere[st], nSlow))
	}
	for _, g := range []struct {
		name string
		lat  sample
	}{{"sent by the request that accepted it", p.here}, {"sent from a goroutine (no free send slot, or older receipts first)", p.goroutine}} {
		if len(g.lat) > 0 {
			fmt.Fprintf(w, "    %-88s %d sales, handler p50 %s / p99 %s\n", g.name+":", len(g.lat), ms(g.lat.p50()), ms(g.lat.p99()))
		}
	}
	if clientMean > 0 {
		outside := clientMean - time.Duration(float64(p.handler)/n)
		fmt.Fprintf(w, "  %-90s %8.1f µs\n", "outside the handler: the client's write and read, net/http before and after the handler", float64(outside)/1e3)
		fmt.Fprintf(w, "  %-90s %8.1f µs\n", "the client's mean latency", float64(clientMean)/1e3)
	}
}

// printOnlinePhasesFile prints the table of the trace in file.
func printOnlinePhasesFile(w io.Writer, file string, clientMean time.Duration) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("online phases: %w", err)
	}
	defer f.Close()
	p, err := readOnlinePhases(f)
	if err != nil {
		return fmt.Errorf("online phases of %s: %w", file, err)
	}
	p.print(w, clientMean)
	return nil
}

// profileOnline runs receiptd in this process (daemon.New and Run, as
// cmd/receiptd does, logging off) on the simulator in a process of its
// own at 0 ms latency, traces one client's online sales for o.acceptFor
// into the scratch directory (trace-online.out, cpu-online.pprof, kept
// with -keep) and prints where each microsecond goes.
func (b *bench) profileOnline(ctx context.Context, o options) (err error) {
	simP, err := startHelperProcess(ctx, "simulator", []string{simEnv + "=1"})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, simP.close()) }()
	cfg, _, err := b.config(simP.url, 2)
	if err != nil {
		return err
	}
	// The collector at GOGC 400, as cmd/receiptd sets it when GOGC is
	// not set (its 32 MiB soft limit is left out: this process's heap
	// holds the benchmark's client too). At Go's default a GC marked
	// during about a tenth of the sales here.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	d, stopDaemon, err := runInProcess(ctx, cfg)
	if err != nil {
		return fmt.Errorf("online profile: %w", err)
	}
	defer func() { err = errors.Join(err, stopDaemon()) }()
	c := newClient()
	if err := setSimLatency(ctx, c, simP.url, *onlineTraceLatency); err != nil {
		return err
	}
	if _, err := measureOnline(ctx, c, d.URL(), time.Second, "prof-owarm"); err != nil {
		return err
	}
	var r onlineRound
	_, err = profiled(filepath.Join(b.dir, "online"), func() (acceptResult, error) {
		r, err = measureOnline(ctx, c, d.URL(), o.acceptFor, "prof-online")
		return acceptResult{}, err
	})
	if err != nil {
		return err
	}
	var sum time.Duration
	for _, l := range r.lat {
		sum += l
	}
	mean := sum / time.Duration(max(1, len(r.lat)))
	file := filepath.Join(b.dir, "trace-online.out")
	again := "-keep keeps the trace"
	if o.keep {
		again = "receiptd-bench -online-phases " + file
	}
	fmt.Printf("\nWhere each microsecond of an online sale goes, receiptd in this process, simulator at %s, 1 client, %d sales in %s "+
		"(p50 %s, mean %s, tracer on; %s):\n", *onlineTraceLatency, len(r.lat), o.acceptFor, ms(r.lat.p50()), ms(mean), again)
	return printOnlinePhasesFile(os.Stdout, file, mean)
}
