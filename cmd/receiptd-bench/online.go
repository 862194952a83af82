package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// The online step measures the sale a POS makes while PosAPI answers: one
// client posting without a Prefer header, so receiptd waits for the tax
// service's answer (accept.wait, 5 s) and answers with it. Each request
// is a new sale (a new billIdSuffix). Four servers (five with
// -online-also), each its own process,
// measured in alternating windows, the order rotated every round:
//
//   - direct: the simulator itself, over a keep-alive connection;
//   - direct, fresh connection: the same with a new TCP connection for
//     each request, dialed on the request's path: the handshake's price
//     (receiptd predials, or takes the last create's connection:
//     limits.md);
//   - forwarding: a durable forwarding server, the reference: the body
//     appended to a file and fdatasynced, then posted to the simulator
//     (keep-alive) and its answer returned;
//   - receiptd;
//   - with -online-also BIN, a second receiptd, that binary (another
//     commit's build): a change's effect measured in the same windows,
//     apart from the machine's moods between runs.
//
// Only 200 answers count. At simulator latencies of 0 and 20 ms the
// target holds receiptd's time added over a direct call to at most
// onlineTarget times the forwarding server's, at p50 and at p99 (each
// the median of the rounds' own).
const onlineTarget = 1.5

var onlineNoTrace = flag.Bool("online-no-trace", false, "with -online-only: skip the traced window")

var onlineAlso = flag.String("online-also", "", "with -online-only: measure this receiptd `binary` too (another commit's build), in the same windows")

var onlineOnly = flag.Bool("online-only", false,
	"run only the online step: one client posting without Prefer to receiptd, a durable forwarding server and the simulator, alternating windows; then where each microsecond goes, from a trace")

// Environment of this program started as a helper process (startHelperProcess).
const (
	simEnv       = "RECEIPTD_BENCH_SIM"         // "1": serve the simulator
	forwardEnv   = "RECEIPTD_BENCH_FORWARD_DIR" // serve the forwarding reference, appending into this directory
	forwardToEnv = "RECEIPTD_BENCH_FORWARD_TO"  // the simulator's URL it forwards to
)

// serveSimProcess is this program's work when simEnv is set: the
// simulator, with a lottery reserve no run empties.
func serveSimProcess() {
	s := sim.New(sim.Options{Seed: 1, Lotteries: 1 << 30})
	if err := s.Start("127.0.0.1:0"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serveUntilParentGoes(s.URL(), s.Close)
}

// forwarder is the online step's reference: what a durable forwarding
// server does, and nothing more. Each POST's body is appended to one file
// and fdatasynced under a mutex, then posted to the upstream over a
// keep-alive connection, and the upstream's status and body are returned.
type forwarder struct {
	f   *os.File
	up  string
	c   *http.Client
	srv *http.Server
	url string
	mu  sync.Mutex
}

func serveForwardProcess(dir, upstream string) {
	f, err := os.OpenFile(filepath.Join(dir, "forward.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "forwarding server:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "forwarding server:", err)
		os.Exit(1)
	}
	fw := &forwarder{f: f, up: upstream, url: "http://" + ln.Addr().String(),
		c: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	fw.srv = &http.Server{Handler: fw, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = fw.srv.Serve(ln) }()
	serveUntilParentGoes(fw.url, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return errors.Join(fw.srv.Shutdown(ctx), fw.f.Close())
	})
}

func (fw *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fw.mu.Lock()
	_, err = fw.f.Write(body)
	if err == nil {
		err = fdatasync(fw.f)
	}
	fw.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, fw.up+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := fw.c.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// onlineServer is one server the online step measures.
type onlineServer struct {
	name string
	url  string
	c    *http.Client // keep-alive, or a new connection each request
}

// onlineRound is one server's window: the latencies of its 200 answers,
// and how many answers were something else.
type onlineRound struct {
	lat   sample
	other int
	first string // the first other answer, for the report
}

// onlineLevel is the online step at one simulator latency.
type onlineLevel struct {
	latency time.Duration
	window  time.Duration
	servers []onlineServer
	rounds  [][]onlineRound // [server][round]
}

// The servers of a level, by index.
const (
	onDirect = iota
	onDirectFresh
	onForward
	onReceiptd
	onAlso // -online-also, when given
)

// runOnline starts the simulator and the forwarding reference as
// processes of their own and receiptd on that simulator, and measures the
// four servers in alternating windows at each simulator latency.
func (b *bench) runOnline(ctx context.Context, o options) (_ []onlineLevel, err error) {
	simP, err := startHelperProcess(ctx, "simulator", []string{simEnv + "=1"})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, simP.close()) }()
	fwDir := filepath.Join(b.dir, "forward")
	if err := os.MkdirAll(fwDir, 0o700); err != nil {
		return nil, err
	}
	fwP, err := startHelperProcess(ctx, "forwarding server", []string{forwardEnv + "=" + fwDir, forwardToEnv + "=" + simP.url})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, fwP.close()) }()
	cfg, dir, err := b.config(simP.url, 2)
	if err != nil {
		return nil, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stop(ctx, p)) }()
	var also *harness.Process
	if *onlineAlso != "" {
		if also, err = b.startBuild(ctx, *onlineAlso, simP.url); err != nil {
			return nil, fmt.Errorf("online: %w", err)
		}
		defer func() { err = errors.Join(err, stop(ctx, also)) }()
	}
	keep := newClient()
	fresh := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	servers := []onlineServer{
		onDirect:      {name: "direct", url: simP.url, c: keep},
		onDirectFresh: {name: "direct, fresh connection", url: simP.url, c: fresh},
		onForward:     {name: "forwarding", url: fwP.url, c: keep},
		onReceiptd:    {name: "receiptd", url: p.URL(), c: keep},
	}
	if also != nil {
		servers = append(servers, onlineServer{name: "receiptd " + filepath.Base(*onlineAlso), url: also.URL(), c: keep})
	}
	// A round's p99 needs sales to be one: at 20 ms a window of 2 s held
	// about 90 of one server's, so its "p99" was the round's slowest sale
	// or the one before. A window lasts long enough for roundSales at the
	// simulator's latency (10 s at 20 ms).
	rounds, window, roundSales := 5, 2*time.Second, 500
	if o.acceptFor < 5*time.Second { // -quick
		rounds, window, roundSales = 3, time.Second, 250
	}
	var out []onlineLevel
	for _, lat := range []time.Duration{0, 20 * time.Millisecond} {
		if err := setSimLatency(ctx, keep, simP.url, lat); err != nil {
			return nil, err
		}
		lw := max(window, time.Duration(roundSales)*lat)
		lv := onlineLevel{latency: lat, window: lw, servers: servers, rounds: make([][]onlineRound, len(servers))}
		for i, s := range servers {
			if _, err := measureOnline(ctx, s.c, s.url, window/2, fmt.Sprintf("owarm%d-%d", lat.Milliseconds(), i)); err != nil {
				return nil, fmt.Errorf("online %s: %w", s.name, err)
			}
		}
		for round := range rounds {
			for k := range servers {
				i := (k + round) % len(servers)
				r, err := measureOnline(ctx, servers[i].c, servers[i].url, lw, fmt.Sprintf("o%d-%d-%d", lat.Milliseconds(), round, i))
				if err != nil {
					return nil, fmt.Errorf("online %s: %w", servers[i].name, err)
				}
				if !clock.Sleep(ctx, settle) {
					return nil, ctx.Err()
				}
				lv.rounds[i] = append(lv.rounds[i], r)
			}
		}
		out = append(out, lv)
	}
	return out, nil
}

// setSimLatency replaces the simulator's faults with a fixed latency.
func setSimLatency(ctx context.Context, c *http.Client, simURL string, d time.Duration) error {
	body := "{}"
	if d > 0 {
		body = fmt.Sprintf(`{"latency":%q}`, d.String())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, simURL+"/sim/faults", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("simulator latency: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("simulator latency: status %d", resp.StatusCode)
	}
	return nil
}

// measureOnline posts new sales from one client for d, without Prefer
// and without an Idempotency-Key (receiptd derives the key from the
// billIdSuffix, new every time), and times the 200 answers.
func measureOnline(ctx context.Context, c *http.Client, url string, d time.Duration, tag string) (onlineRound, error) {
	var r onlineRound
	deadline := time.Now().Add(d)
	for n := 0; time.Now().Before(deadline); n++ {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		suffix := fmt.Sprintf("%s-%07d", tag, n)
		t0 := time.Now()
		code, answer, err := postSale(ctx, c, url, suffix)
		el := time.Since(t0)
		switch {
		case err != nil:
			return r, err
		case code == http.StatusOK:
			r.lat = append(r.lat, el)
		default:
			r.other++
			if r.first == "" {
				r.first = fmt.Sprintf("HTTP %d %.120s", code, answer)
			}
		}
	}
	if len(r.lat) == 0 {
		return r, fmt.Errorf("no 200 answer in %s (%d others, the first %s)", d, r.other, r.first)
	}
	return r, nil
}

// postSale posts one sale as an unmodified POS does.
func postSale(ctx context.Context, c *http.Client, url, suffix string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/rest/receipt", bytes.NewReader(body(suffix)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("post %s: %w", suffix, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("post %s: %w", suffix, err)
	}
	return resp.StatusCode, b, nil
}

// roundsMedian is the median over a server's rounds of one percentile.
func roundsMedian(rs []onlineRound, pct float64) time.Duration {
	v := make([]time.Duration, len(rs))
	for i, r := range rs {
		v[i] = r.lat.pct(pct)
	}
	return median(v)
}

// added is the time server i adds over a direct call at pct: the medians
// of the rounds' own percentiles, one less the other.
func (l onlineLevel) added(i int, pct float64) time.Duration {
	return roundsMedian(l.rounds[i], pct) - roundsMedian(l.rounds[onDirect], pct)
}

// ratios is receiptd's added time over the forwarding server's, at p50
// and p99.
func (l onlineLevel) ratios() (p50, p99 float64) {
	return float64(l.added(onReceiptd, 50)) / float64(l.added(onForward, 50)),
		float64(l.added(onReceiptd, 99)) / float64(l.added(onForward, 99))
}

// met reports whether the level meets the target at both percentiles.
func (l onlineLevel) met() bool {
	p50, p99 := l.ratios()
	return p50 > 0 && p50 <= onlineTarget && p99 > 0 && p99 <= onlineTarget
}

func (l onlineLevel) report() string {
	var b strings.Builder
	p50, p99 := l.ratios()
	fmt.Fprintf(&b, "- the online sale, 1 client, no Prefer, simulator latency %s, %d alternating windows of %s (medians of the rounds): "+
		"receiptd adds %s / %s (p50 / p99) over a direct call, the forwarding server %s / %s: %.2fx / %.2fx (target <= %.1fx) %s\n",
		l.latency, len(l.rounds[onDirect]), l.window, ms(l.added(onReceiptd, 50)), ms(l.added(onReceiptd, 99)),
		ms(l.added(onForward, 50)), ms(l.added(onForward, 99)), p50, p99, onlineTarget, verdict(l.met()))
	for i, s := range l.servers {
		n, other := 0, 0
		var p50s []string
		for _, r := range l.rounds[i] {
			n += len(r.lat)
			other += r.other
			p50s = append(p50s, ms(r.lat.p50()))
		}
		fmt.Fprintf(&b, "    %-25s p50 %s / p99 %s (%d answers 200", s.name+":", ms(roundsMedian(l.rounds[i], 50)), ms(roundsMedian(l.rounds[i], 99)), n)
		if other > 0 {
			fmt.Fprintf(&b, ", %d others: %s", other, l.rounds[i][0].first)
		}
		fmt.Fprintf(&b, "); the rounds' p50: %s\n", strings.Join(p50s, " "))
	}
	if len(l.servers) > onAlso {
		fmt.Fprintf(&b, "    %s adds %s / %s: %.2fx / %.2fx the forwarding server's; this receiptd's added p50 is %.2fx its\n",
			l.servers[onAlso].name, ms(l.added(onAlso, 50)), ms(l.added(onAlso, 99)),
			float64(l.added(onAlso, 50))/float64(l.added(onForward, 50)), float64(l.added(onAlso, 99))/float64(l.added(onForward, 99)),
			float64(l.added(onReceiptd, 50))/float64(l.added(onAlso, 50)))
	}
	fmt.Fprintf(&b, "    a fresh connection costs %s at p50 over keep-alive (direct)", ms(l.added(onDirectFresh, 50)))
	return b.String()
}

// onlineOnlyRun runs the online step alone, then one traced window of
// receiptd in this process, and prints where each microsecond goes.
func (b *bench) onlineOnlyRun(ctx context.Context, o options) error {
	fmt.Printf("online step alone: one client posting new sales without Prefer, alternating windows\n")
	fmt.Printf("load average before: %s\n", loadAvg())
	ls, err := b.runOnline(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("load average after: %s\n", loadAvg())
	for _, l := range ls {
		fmt.Println(l.report())
	}
	if *onlineNoTrace {
		return nil
	}
	return b.profileOnline(ctx, o)
}
