package headoffice_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/headoffice"
)

// EnvFleetE2E turns on TestFleetEndToEnd (a CI step of its own: it runs
// 20 tills and a Prometheus for about three minutes).
const EnvFleetE2E = "RECEIPTD_FLEET_E2E"

// Thresholds of the rules' test copy: the shipped ones (15 minutes) are
// out of a CI run's reach. The test proves the expressions; the
// thresholds are the operator's.
var e2eRules = map[string]headoffice.Shorten{
	"ReceiptdTaxServiceDown": {For: "10s"},
	"ReceiptdTillSilent":     {For: "20s", Old: "> 900", New: "> 20"},
}

const (
	e2eTills    = 20
	e2eInterval = 2 * time.Second
	e2eOutage   = 65 * time.Second
)

// till is one receiptd of the fleet.
type till struct {
	shop, id string
	proc     *harness.Process
}

func (t till) key() string { return t.shop + "/" + t.id }

// TestFleetEndToEnd: 20 tills (the real binary) push to a real Prometheus
// (remote-write receiver, out-of-order window, the shipped rules with
// shortened thresholds). Three are made faulty: one's tax service is down,
// one has a receipt stuck unsent past its critical age, one is killed.
// The head office is stopped for 65 s and started again on the same
// storage; then every live till's samples of the outage are there
// (backfilled from its buffer), and the rules fire for exactly the three
// faulty tills.
func TestFleetEndToEnd(t *testing.T) {
	if os.Getenv(EnvFleetE2E) == "" {
		t.Skipf("set %s=1 to run the fleet end-to-end test (CI runs it in its own step)", EnvFleetE2E)
	}
	promBin := headoffice.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	rules, err := headoffice.ShortenedRules(filepath.Join(repoRoot(t), headoffice.RulesFile), e2eRules)
	require.NoError(t, err)
	hoDir := t.TempDir()
	ho, err := headoffice.Start(ctx, promBin, headoffice.Options{Dir: hoDir,
		Rules: map[string][]byte{"receiptd-rules.yml": rules}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ho.Stop() })
	var tills []till
	defer func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(hoDir, "prometheus.log"))
			t.Logf("prometheus log (end):\n%s", tail(string(log), 3000))
			for _, tl := range tills[:min(len(tills), 5)] {
				t.Logf("till %s log (end):\n%s", tl.key(), tl.proc.LogTail(1500))
			}
		}
	}()

	healthy, down := newSim(t, sim.Faults{}), newSim(t, sim.Faults{Down: true})
	silent := newBlackHole(t)
	bin, err := harness.Build(ctx, t.TempDir())
	require.NoError(t, err)
	tills = startFleet(ctx, t, fleetSpec{bin: bin, n: e2eTills, upstream: healthy.URL(), write: ho.WriteURL(),
		interval: e2eInterval, adjust: func(i int, cfg *config.Config) {
			switch i {
			case 1: // the tax service down
				cfg.Upstream.BaseURL = down.URL()
			case 2: // a receipt that never gets an answer, past its critical age
				cfg.Upstream.BaseURL = silent
				cfg.Upstream.Timeout = config.Dur(time.Hour)
				cfg.Accept.Wait = config.Dur(0)
				cfg.Alerts.UnsentWarn, cfg.Alerts.UnsentCritical = config.Dur(time.Second), config.Dur(2*time.Second)
			}
		}})
	taxDown, stuck, killed := tills[1], tills[2], tills[3]

	waitVisible(ctx, t, ho, e2eTills)
	require.Equal(t, http.StatusAccepted, postReceipt(t, taxDown.proc.URL(), "000001"))
	require.Equal(t, http.StatusAccepted, postReceipt(t, stuck.proc.URL(), "000001"))
	require.NoError(t, killed.proc.Kill())

	require.NoError(t, ho.Stop())
	from := time.Now()
	t.Logf("head office stopped for %s", e2eOutage)
	time.Sleep(e2eOutage)
	to := time.Now()
	require.NoError(t, ho.Restart(ctx))

	expected := int(e2eOutage/e2eInterval) - 1 // at most one interval lost at each edge
	received := waitBackfill(ctx, t, ho, from, to, expected, killed.key())
	fired := waitAlerts(ctx, t, ho, map[string]string{
		taxDown.key(): "ReceiptdTaxServiceDown", stuck.key(): "ReceiptdUnsentCritical", killed.key(): "ReceiptdTillSilent",
	})
	checkFleetTable(ctx, t, ho, e2eTills)

	total := 0
	for _, n := range received {
		total += n
	}
	fmt.Printf("fleet e2e totals: tills=%d live=%d outage=%s samples(receiptd_build_info) expected>=%d per live till, %d in all; received %d (min per till %d); alerts fired: %s\n",
		e2eTills, len(received), to.Sub(from).Round(time.Second), expected, expected*len(received), total, minOf(received), strings.Join(fired, ", "))
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(dir, "..", "..", "..")
}

// newBlackHole is a tax service that takes connections and never
// answers: a receipt sent to it stays unsent while the till still counts
// the tax service as up (no attempt has failed). Its connections close at
// the test's end.
func newBlackHole(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

func newSim(t *testing.T, f sim.Faults) *sim.Sim {
	s := sim.New(sim.Options{Seed: 3})
	require.NoError(t, s.Start("127.0.0.1:0"))
	require.NoError(t, s.SetFaults(f))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fleetSpec is a fleet of tills to start.
type fleetSpec struct {
	bin             string
	n               int
	upstream, write string // the tax service, the head office
	interval        time.Duration
	adjust          func(i int, cfg *config.Config) // may be nil
}

// startFleet starts the tills, till i labelled shop = "S<i/5>", till =
// "<i%5+1>", and waits until each is ready. They are killed at the
// test's end.
func startFleet(ctx context.Context, t *testing.T, f fleetSpec) []till {
	t.Helper()
	tills := make([]till, f.n)
	var wg sync.WaitGroup
	errs := make(chan error, f.n)
	sem := make(chan struct{}, runtime.NumCPU()*2)
	for i := range f.n {
		tills[i] = till{shop: fmt.Sprintf("S%02d", i/5), id: strconv.Itoa(i%5 + 1)}
		cfg := tillConfig(t, f.upstream, f.write, map[string]string{"shop": tills[i].shop, "till": tills[i].id})
		cfg.Fleet.Interval = config.Dur(f.interval)
		if f.adjust != nil {
			f.adjust(i, &cfg)
		}
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p, err := harness.Start(ctx, f.bin, dir, cfg)
			if err == nil {
				tills[i].proc = p
				err = p.WaitReady(ctx)
			}
			if err != nil {
				errs <- fmt.Errorf("till %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for _, tl := range tills {
		if tl.proc != nil {
			p := tl.proc
			t.Cleanup(func() { _ = p.Kill() })
		}
	}
	for err := range errs {
		require.NoError(t, err)
	}
	return tills
}

// waitVisible waits until the head office holds receiptd_build_info of n
// tills (by shop and till).
func waitVisible(ctx context.Context, t *testing.T, ho *headoffice.Server, n int) {
	t.Helper()
	var got int
	require.Eventually(t, func() bool {
		res, err := ho.Query(ctx, "count by (shop, till) (receiptd_build_info)", time.Time{})
		got = len(res)
		return err == nil && got == n
	}, 60*time.Second, 250*time.Millisecond, "tills visible at the head office: %d of %d", got, n)
}

// waitBackfill waits until every live till has at least expected samples
// of receiptd_build_info in [from, to] at the head office, and returns
// the count per till (shop/till). The killed till is left out.
func waitBackfill(ctx context.Context, t *testing.T, ho *headoffice.Server, from, to time.Time, expected int, killed string) map[string]int {
	t.Helper()
	window := to.Sub(from).Truncate(time.Second)
	q := fmt.Sprintf("sum by (shop, till) (count_over_time(receiptd_build_info[%ds]))", int(window.Seconds()))
	var counts map[string]int
	ok := assertEventually(90*time.Second, func() bool {
		res, err := ho.Query(ctx, q, from.Add(window))
		if err != nil {
			return false
		}
		counts = map[string]int{}
		for _, r := range res {
			k := r.Metric["shop"] + "/" + r.Metric["till"]
			if k != killed {
				counts[k] = int(r.Value)
			}
		}
		if len(counts) != e2eTills-1 {
			return false
		}
		return minOf(counts) >= expected
	})
	require.True(t, ok, "every live till's samples of the outage (want >= %d each of %d tills): %v", expected, e2eTills-1, counts)
	return counts
}

// waitAlerts waits until the firing alerts are exactly want (till →
// alert name), held for a few evaluations, and returns them as
// "name{shop/till}".
func waitAlerts(ctx context.Context, t *testing.T, ho *headoffice.Server, want map[string]string) []string {
	t.Helper()
	var wantList []string
	for k, name := range want {
		wantList = append(wantList, name+"{"+k+"}")
	}
	sort.Strings(wantList)
	var got []string
	stable := 0
	ok := assertEventually(3*time.Minute, func() bool {
		alerts, err := ho.Firing(ctx)
		if err != nil {
			return false
		}
		got = got[:0]
		for _, a := range alerts {
			got = append(got, a.Labels["alertname"]+"{"+a.Labels["shop"]+"/"+a.Labels["till"]+"}")
		}
		sort.Strings(got)
		if strings.Join(got, " ") == strings.Join(wantList, " ") {
			stable++
		} else {
			stable = 0
		}
		return stable >= 5
	})
	require.True(t, ok, "firing alerts: got %v, want exactly %v", got, wantList)
	return got
}

// checkFleetTable runs the dashboard's fleet table queries: one row per
// till, the killed one included.
func checkFleetTable(ctx context.Context, t *testing.T, ho *headoffice.Server, n int) {
	t.Helper()
	for _, q := range []string{
		`time() - max by (shop, till, instance) (max_over_time(receiptd_fleet_last_success_timestamp_seconds[1d]))`,
		`max by (shop, till, instance) (last_over_time(receiptd_oldest_unsent_age_seconds[1d]))`,
		`min by (shop, till, instance) (last_over_time(receiptd_upstream_up[1d]))`,
		`max by (shop, till, instance) (last_over_time(receiptd_fleet_buffered_samples[1d]))`,
	} {
		res, err := ho.Query(ctx, q, time.Time{})
		require.NoError(t, err)
		require.Len(t, res, n, "one row per till: %s", q)
	}
}

func postReceipt(t *testing.T, base, suffix string) int {
	resp, err := http.Post(base+"/rest/receipt", "application/json", strings.NewReader(string(sim.SampleReceipt("POS-1", suffix))))
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

func minOf(m map[string]int) int {
	first, out := true, 0
	for _, v := range m {
		if first || v < out {
			first, out = false, v
		}
	}
	return out
}

// assertEventually polls cond every 250ms until it holds or d passes.
func assertEventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(250 * time.Millisecond)
	}
	return false
}
