package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/receiptd/receiptd/internal/config"
)

// deadHeadOffice refuses connections: the push buffers and backs off.
const deadHeadOffice = "http://127.0.0.1:1/api/v1/write"

// fleetResult is the push's cost, each beside its reference.
type fleetResult struct {
	acceptOn []acceptResult // push on, head office down
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

// runFleet measures accept with the push on and the head office down,
// and an idle daemon pushing at the default interval. The idle window is
// at least two intervals, so it holds pushes to count.
func (b *bench) runFleet(ctx context.Context, o options) (fleetResult, error) {
	var r fleetResult
	var err error
	b.fleet = func(c *config.Config) { c.Fleet.RemoteWriteURL = deadHeadOffice }
	defer func() { b.fleet = nil }()
	if r.acceptOn, err = b.runAccept(ctx, o.acceptFor); err != nil {
		return r, err
	}
	pc, err := startPushCounter()
	if err != nil {
		return r, err
	}
	defer pc.srv.Close()
	b.fleet = func(c *config.Config) { c.Fleet.RemoteWriteURL = pc.url }
	window := max(o.idleFor, 2*config.Default().Fleet.Interval.Duration+5*time.Second)
	if r.idleOn, err = b.runIdle(ctx, 15*time.Second, window); err != nil {
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
	for i, on := range r.acceptOn {
		if i >= len(ref.accept) || (on.clients != 1 && on.clients != 64) {
			continue
		}
		off := ref.accept[i]
		ratio := float64(on.lat.p50()) / float64(off.lat.p50())
		verdict := "PASS"
		if ratio > 1.05 {
			verdict = "MISS"
		}
		fmt.Fprintf(&b, "- accept, %d clients, push on (head office down): p50 %s / p99 %s; off: p50 %s / p99 %s; p50 %.3fx (target <= 1.05x) %s\n",
			on.clients, ms(on.lat.p50()), ms(on.lat.p99()), ms(off.lat.p50()), ms(off.lat.p99()), ratio, verdict)
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
