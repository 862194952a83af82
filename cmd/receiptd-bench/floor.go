package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// The floor step holds accept to the naive durable server (naive.go) in
// the same run: at 1 client receiptd's p50 against the naive server's, at
// 64 clients receiptd's throughput against the naive server's. Both run
// at once and are measured in alternating windows, the order swapped
// every round, so that the drift of a shared machine hits both alike; the
// figure held to each target is the median of the rounds' own ratios.
const (
	floorTarget1  = 1.1 // receiptd p50 / naive p50 at 1 client, at most
	floorTarget64 = 4.5 // receiptd / naive throughput at 64 clients, at least
)

var floorOnly = flag.Bool("floor-only", false, "run only the floor step: accept against the naive durable server, alternating windows")

// floorLevel is one client level of the floor step.
type floorLevel struct {
	clients int
	window  time.Duration
	rd, nv  []acceptResult // receiptd's and the naive server's windows, round by round
	// CPU time run over all rounds, by receiptd's and the naive server's
	// process and by this one's clients while each was measured.
	server, client [2]time.Duration
	// receiptd's log flushes and the records they made durable over its
	// windows: records/flushes is the mean group.
	flushes, records float64
}

// ratios is each round's figure: p50 receiptd / naive at 1 client,
// throughput receiptd / naive otherwise.
func (f floorLevel) ratios() []float64 {
	out := make([]float64, len(f.rd))
	for i := range f.rd {
		if f.clients == 1 {
			out[i] = float64(f.rd[i].lat.p50()) / float64(f.nv[i].lat.p50())
		} else {
			out[i] = f.rd[i].rate / f.nv[i].rate
		}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func pooled(rs []acceptResult) (s sample, rate float64) {
	for _, r := range rs {
		s = append(s, r.lat...)
		rate += r.rate
	}
	return s, rate / float64(max(1, len(rs)))
}

// report prints the level's rounds and its verdict.
func (f floorLevel) report() string {
	rs := f.ratios()
	m := median(rs)
	rd, rdRate := pooled(f.rd)
	nv, nvRate := pooled(f.nv)
	var b strings.Builder
	var what string
	ok := false
	if f.clients == 1 {
		what, ok = fmt.Sprintf("p50 receiptd / naive: median %.3fx (target <= %.2fx)", m, floorTarget1), m <= floorTarget1
	} else {
		what, ok = fmt.Sprintf("throughput receiptd / naive: median %.2fx (target >= %.1fx)", m, floorTarget64), m >= floorTarget64
	}
	fmt.Fprintf(&b, "- accept at the floor, %d client(s), %d alternating windows of %s each: %s %s\n",
		f.clients, len(rs), f.window, what, verdict(ok))
	fmt.Fprintf(&b, "    receiptd p50 %s / p99 %s, %.0f/s (%d requests); naive p50 %s / p99 %s, %.0f/s (%d requests)\n",
		ms(rd.p50()), ms(rd.p99()), rdRate, len(rd), ms(nv.p50()), ms(nv.p99()), nvRate, len(nv))
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.3f", r)
	}
	fmt.Fprintf(&b, "    the rounds' ratios in order: %s", strings.Join(parts, " "))
	if f.server[0] > 0 && len(rd) > 0 && len(nv) > 0 {
		per := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }
		fmt.Fprintf(&b, "\n    CPU a receipt: receiptd %.0f µs + its clients %.0f µs; naive %.0f µs + its clients %.0f µs",
			per(f.server[0], len(rd)), per(f.client[0], len(rd)), per(f.server[1], len(nv)), per(f.client[1], len(nv)))
	}
	if f.flushes > 0 {
		fmt.Fprintf(&b, "\n    receiptd's log: %.1f records a flush (%.0f flushes)", f.records/f.flushes, f.flushes)
	}
	return b.String()
}

// runFloor starts the naive server and receiptd on a simulator that is
// down (every answer a durable 202, as in runAccept) and measures them in
// alternating windows at 1 and 64 clients.
func (b *bench) runFloor(ctx context.Context, o options) (_ []floorLevel, err error) {
	s, err := startDownSim()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	n, err := startNaiveProcess(ctx, b.dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, n.close()) }()
	cfg, dir, err := b.config(s.URL(), 2)
	if err != nil {
		return nil, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stop(ctx, p)) }()
	rounds, window := 9, 2*time.Second
	if o.acceptFor < 5*time.Second { // -quick
		rounds, window = 5, time.Second
	}
	c := newClient()
	var out []floorLevel
	for _, clients := range []int{1, 64} {
		f, err := alternate(ctx, c, [2]string{p.URL(), n.url}, [2]int{p.PID, n.cmd.Process.Pid}, clients, rounds, window)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// alternate measures receiptd (urls[0]) and the naive server (urls[1])
// in rounds of one window each, receiptd first in even rounds; pids are
// their processes, whose CPU time is counted beside this process's.
func alternate(ctx context.Context, c *http.Client, urls [2]string, pids [2]int, clients, rounds int, window time.Duration) (floorLevel, error) {
	f := floorLevel{clients: clients, window: window}
	for i, u := range urls {
		if _, err := measureAccept(ctx, c, u, clients, window/2, fmt.Sprintf("fwarm%d-%d", clients, i)); err != nil {
			return f, err
		}
	}
	for round := range rounds {
		var got [2]acceptResult
		for k := range 2 {
			i := k ^ round%2
			var f0, r0 float64
			var logErr error
			if i == 0 {
				f0, r0, logErr = logCounters(ctx, c, urls[0])
			}
			s0, sErr := procRunTime(pids[i])
			c0, cErr := procRunTime(os.Getpid())
			r, err := measureAccept(ctx, c, urls[i], clients, window, fmt.Sprintf("f%d-%d-%d", clients, round, i))
			if err != nil {
				return f, err
			}
			s1, sErr1 := procRunTime(pids[i])
			c1, cErr1 := procRunTime(os.Getpid())
			if i == 0 && logErr == nil {
				if f1, r1, err := logCounters(ctx, c, urls[0]); err == nil {
					f.flushes += f1 - f0
					f.records += r1 - r0
				}
			}
			if err := errors.Join(sErr, cErr, sErr1, cErr1); err == nil {
				f.server[i] += s1 - s0
				f.client[i] += c1 - c0
			}
			got[i] = r
		}
		f.rd, f.nv = append(f.rd, got[0]), append(f.nv, got[1])
	}
	return f, nil
}

// floorOnlyRun runs the floor step alone and prints its lines.
func (b *bench) floorOnlyRun(ctx context.Context, o options) error {
	fmt.Printf("floor step alone: accept against the naive durable server (append + fdatasync under a mutex), alternating windows\n")
	fmt.Printf("load average before: %s\n", loadAvg())
	fs, err := b.runFloor(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("load average after: %s\n", loadAvg())
	for _, f := range fs {
		fmt.Println(f.report())
	}
	return nil
}
