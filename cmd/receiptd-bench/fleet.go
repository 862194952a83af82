package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// deadHeadOffice refuses connections: the push buffers and backs off.
const deadHeadOffice = "http://127.0.0.1:1/api/v1/write"

// fleetResult is the push's cost, each beside its reference.
type fleetResult struct {
	accept   []pairedAccept // push on (head office down) against off, interleaved
	idleOn   idleResult     // push on at the default interval, head office up
	requests int            // pushes the head office received in idleOn
	bodies   int64          // their bodies' bytes
	headers  int64          // their request lines and headers, as sent
}

// pushCounter is a head office that accepts every push and counts bytes.
type pushCounter struct {
	mu              sync.Mutex
	requests        int
	bodies, headers int64
	srv             *http.Server
	url             string
}

func startPushCounter() (*pushCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	pc := &pushCounter{url: "http://" + ln.Addr().String() + "/api/v1/write"}
	pc.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		var h strings.Builder
		_ = r.Header.Write(&h)
		pc.mu.Lock()
		pc.requests++
		pc.bodies += n
		pc.headers += int64(len(r.Method)+len(r.URL.RequestURI())+len(" HTTP/1.1\r\nHost: \r\n\r\n")+len(r.Host)) + int64(h.Len())
		pc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = pc.srv.Serve(ln) }()
	return pc, nil
}

// runFleet measures accept with the push on and the head office down
// against the push off, interleaved (runPairedAccept), and an idle daemon
// pushing at the default interval. The idle window is at least two
// intervals, so it holds pushes to count.
func (b *bench) runFleet(ctx context.Context, o options) (fleetResult, error) {
	var r fleetResult
	var err error
	defer func() { b.fleet = nil }()
	if r.accept, err = b.runPairedAccept(ctx, o); err != nil {
		return r, err
	}
	pc, err := startPushCounter()
	if err != nil {
		return r, err
	}
	defer pc.srv.Close()
	b.fleet = func(c *config.Config) { c.Fleet.RemoteWriteURL = pc.url }
	window := max(o.idleFor, 2*config.Default().Fleet.Interval.Duration+5*time.Second)
	if r.idleOn, err = b.runIdle(ctx, window); err != nil {
		return r, err
	}
	pc.mu.Lock()
	r.requests, r.bodies, r.headers = pc.requests, pc.bodies, pc.headers
	pc.mu.Unlock()
	if r.requests == 0 {
		return r, fmt.Errorf("fleet: no push reached the head office in %s", window)
	}
	return r, nil
}

// report prints the push's figures beside the same run's references.
func (r fleetResult) report(ref results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Fleet push, each figure beside its reference of this run:\n")
	for _, a := range r.accept {
		fmt.Fprintln(&b, a.report())
	}
	on, off := r.idleOn.cpuPerHour(), ref.idle.cpuPerHour()
	verdict := "PASS"
	if on > 5*time.Second {
		verdict = "MISS"
	}
	fmt.Fprintf(&b, "- idle daemon CPU per hour, push on at 60s (%s window): %s; push off: %s (target on < 5s/hour) %s\n",
		r.idleOn.window, on.Round(time.Millisecond), off.Round(time.Millisecond), verdict)
	per := float64(r.bodies+r.headers) / float64(r.requests)
	day := per * 86400 / config.Default().Fleet.Interval.Duration.Seconds()
	verdict = "PASS"
	if day > 5e6 {
		verdict = "MISS"
	}
	fmt.Fprintf(&b, "- wire per till per day at 60s: %.2f MB (%d pushes, %.0f B body + %.0f B request line and headers each; TLS and TCP not counted) (target <= 5 MB) %s\n",
		day/1e6, r.requests, float64(r.bodies)/float64(r.requests), float64(r.headers)/float64(r.requests), verdict)
	rec := float64(r.bodies)/float64(r.requests) + 20 // a record is its payload (one interval's body) plus a 20-byte header
	fmt.Fprintf(&b, "- disk per hour of buffered outage at 60s: %.0f KB (60 records of about %.0f B)\n", rec*60/1e3, rec)
	return b.String()
}

var (
	fleetOnly    = flag.Bool("fleet-only", false, "run only the fleet step's interleaved accept, push on against off")
	fleetControl = flag.Bool("fleet-control", false, "with -fleet-only: the push off in both daemons, to show what the method resolves")
)

// pairedOnly runs the interleaved accept alone and prints its lines.
func (b *bench) pairedOnly(ctx context.Context, o options) error {
	what := "push on against off"
	if *fleetControl {
		what = "control: push off in both (the lines below say \"on\" for the second daemon)"
	}
	fmt.Printf("fleet step alone: accept, %s, interleaved\n", what)
	as, err := b.runPairedAccept(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("load average after: %s\n", loadAvg())
	for _, a := range as {
		fmt.Println(a.report())
	}
	return nil
}

// Paired accept: the push's cost on the accept path is a few percent at
// most, below the drift of a shared machine between two daemons measured
// one after the other. So both daemons run at once and are measured in
// alternating windows, the order swapped every round: drift hits both
// alike, and the spread of the rounds shows what the figure can resolve.
const (
	pairedInterval = 10 * time.Second // the push's interval in the on daemon: 6x the default's work
	pairedTarget   = 1.05             // accept p50 push on, times off
)

// pairedAccept is one client level of the interleaved measurement.
type pairedAccept struct {
	clients int
	rounds  int
	window  time.Duration
	on, off sample    // every request of the rounds, pooled
	ratios  []float64 // each round's p50 on / p50 off
}

// runPairedAccept starts two daemons on one simulator that is down (every
// answer a durable 202, as in runAccept): one without the push, one pushing
// every pairedInterval to a head office that refuses connections (the push
// buffers to disk and backs off). At 1 and 64 clients it measures them in
// alternating windows.
func (b *bench) runPairedAccept(ctx context.Context, o options) ([]pairedAccept, error) {
	s, err := startDownSim()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var ps [2]*harness.Process // off, on
	defer func() {
		for _, p := range ps {
			if p != nil {
				_ = stop(ctx, p)
			}
		}
	}()
	for i := range ps {
		b.fleet = nil
		if i == 1 && !*fleetControl {
			b.fleet = func(c *config.Config) {
				c.Fleet.RemoteWriteURL, c.Fleet.Interval = deadHeadOffice, config.Dur(pairedInterval)
			}
		}
		cfg, dir, err := b.config(s.URL(), 2)
		if err != nil {
			return nil, err
		}
		if ps[i], _, err = b.start(ctx, cfg, dir); err != nil {
			return nil, err
		}
	}
	rounds, window := 12, 2*time.Second
	if o.acceptFor < 5*time.Second { // -quick
		rounds, window = 6, 750*time.Millisecond
	}
	c := newClient()
	var out []pairedAccept
	for _, n := range []int{1, 64} {
		a := pairedAccept{clients: n, rounds: rounds, window: window}
		for i, p := range ps {
			if _, err := measureAccept(ctx, c, p.URL(), n, window/2, fmt.Sprintf("pwarm%d-%d", n, i)); err != nil {
				return nil, err
			}
		}
		for round := range rounds {
			var got [2]sample
			for k := range 2 {
				i := k ^ round%2 // off first in even rounds, on first in odd ones
				r, err := measureAccept(ctx, c, ps[i].URL(), n, window, fmt.Sprintf("p%d-%d-%d", n, round, i))
				if err != nil {
					return nil, err
				}
				got[i] = r.lat
			}
			a.off, a.on = append(a.off, got[0]...), append(a.on, got[1]...)
			a.ratios = append(a.ratios, float64(got[1].p50())/float64(got[0].p50()))
		}
		out = append(out, a)
	}
	return out, nil
}

// ratio is the pooled p50 on / off, the figure held to the target.
func (a pairedAccept) ratio() float64 { return float64(a.on.p50()) / float64(a.off.p50()) }

func (a pairedAccept) report() string {
	r := slices.Clone(a.ratios)
	slices.Sort(r)
	verdict := "PASS"
	if a.ratio() > pairedTarget {
		verdict = "MISS"
	}
	return fmt.Sprintf("- accept, %d client(s), push on every %s (head office down) against off, %d alternating windows of %s each: "+
		"on p50 %s / p99 %s (%d requests); off p50 %s / p99 %s (%d requests); p50 %.3fx (target <= %.2fx) %s; "+
		"the rounds' own p50 ratios: median %.3fx, from %.3fx to %.3fx",
		a.clients, pairedInterval, a.rounds, a.window, ms(a.on.p50()), ms(a.on.p99()), len(a.on),
		ms(a.off.p50()), ms(a.off.p99()), len(a.off), a.ratio(), pairedTarget, verdict,
		r[len(r)/2], r[0], r[len(r)-1])
}
