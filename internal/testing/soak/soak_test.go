package soak_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// params sizes a run.
type params struct {
	load  time.Duration // how long clients post and faults cycle
	pos   int           // POS clients
	kills int           // SIGKILLs during the load phase
	drain time.Duration // the longest the final drain may take
}

func paramsFor(t *testing.T) params {
	p := params{load: 8 * time.Second, pos: 4, kills: 2, drain: 30 * time.Second}
	if os.Getenv("SOAK_FULL") != "" && !testing.Short() {
		p = params{load: 100 * time.Second, pos: 6, kills: 6, drain: 60 * time.Second}
	}
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, "SOAK_DURATION")
		p.load = d
	}
	return p
}

func seedFor(t *testing.T) int64 {
	if s := os.Getenv("SOAK_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "SOAK_SEED")
		return seed
	}
	return time.Now().UnixNano()
}

// TestMain removes the binary testkit.Binary built.
func TestMain(m *testing.M) { testkit.Main(m) }

func TestSoak(t *testing.T) {
	p := paramsFor(t)
	seed := seedFor(t)
	t.Logf("soak seed=%d (repeat with SOAK_SEED=%d) load=%s pos=%d kills=%d", seed, seed, p.load, p.pos, p.kills)
	ctx, cancel := context.WithTimeout(context.Background(), p.load+p.drain+2*time.Minute)
	defer cancel()

	s := sim.New(sim.Options{Seed: seed})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	bin := testkit.Binary(t)
	cfg := soakConfig(t, s.URL())
	proc, err := harness.Start(ctx, bin, t.TempDir(), cfg)
	require.NoError(t, err)
	ctl := &supervisor{bin: bin, proc: proc}
	t.Cleanup(func() { _ = ctl.current().Kill() })
	require.NoError(t, proc.WaitReady(ctx))
	defer func() {
		if t.Failed() {
			t.Logf("receiptd log (end):\n%s", ctl.current().LogTail(6000))
		}
	}()

	tal := runLoad(ctx, t, p, seed, s, ctl)
	require.NoError(t, s.SetFaults(sim.Faults{}))
	require.NoError(t, ctl.ensureRunning(ctx), "receiptd running for the drain")

	c := &http.Client{Timeout: 10 * time.Second}
	counts := waitDrained(ctx, t, c, proc.URL(), p.drain)
	entries := listEntries(ctx, t, c, proc.URL())
	stopCtx, stopCancel := context.WithTimeout(ctx, 20*time.Second)
	defer stopCancel()
	require.NoError(t, ctl.current().Stop(stopCtx), "SIGTERM stops receiptd cleanly")
	checkStore(t, layout.DB(cfg.DataDir))

	f := verify(t, tal, entries, s)
	f.restarts = ctl.restarts
	t.Logf("soak figures: accepted=%d sent=%d cancelled=%d ambiguous=%d duplicates=%d restarts=%d "+
		"deletes=%d (deleted upstream %d) replays=%d pos-retries=%d sim-receipts=%d dropped=%d phases=%d counts=%v",
		f.accepted, f.sent, f.cancelled, f.ambiguous, f.duplicates, f.restarts, tal.deleteReqs, f.deleted,
		tal.replays, tal.retries, f.issued, f.dropped, tal.phases, counts)
	require.Positive(t, f.accepted)
	require.Positive(t, f.sent)
}

// soakConfig is receiptd's configuration for a soak: short backoff so the
// drain is quick, an upstream timeout the "timeout" phase exceeds, and a
// short accept wait so clients that wait keep the load going.
func soakConfig(t *testing.T, upstream string) config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = upstream, upstream
	cfg.Upstream.Timeout = config.Dur(1500 * time.Millisecond)
	cfg.Sync.MinBackoff, cfg.Sync.MaxBackoff = config.Dur(50*time.Millisecond), config.Dur(time.Second)
	cfg.Accept.Wait = config.Dur(time.Second)
	// The soak proves that retries through drops, timeouts and kills lose
	// and double nothing unrecorded, and expects a full drain: an entry
	// held after three lost answers (the default, tested in
	// internal/daemon) would stop that drain. 10 is the most a till may
	// set (config.Bounds); ten lost answers in a row at the worst phase's
	// drop rate of 0.3 is about one entry in 170,000.
	cfg.Sync.MaxAmbiguous = 10
	cfg.Log.Level = "warn"
	return cfg
}

// runLoad runs the POS clients, the fault cycle and the crash loop for
// p.load, and returns what the clients saw once every goroutine has ended.
func runLoad(ctx context.Context, t *testing.T, p params, seed int64, s *sim.Sim, ctl *supervisor) *tally {
	loadCtx, stopLoad := context.WithTimeout(ctx, p.load)
	defer stopLoad()
	tal := &tally{receipts: map[string]string{}, deletes: map[string]string{}}
	var wg sync.WaitGroup
	for i := range p.pos {
		c := newPOS(i, seed, ctl.current().URL(), tal)
		wg.Add(1)
		go func() { defer wg.Done(); c.run(loadCtx, ctx) }()
	}
	wg.Add(3)
	go func() { defer wg.Done(); faultLoop(loadCtx, t, rand.New(rand.NewPCG(uint64(seed), 1)), s, tal) }()
	go func() { defer wg.Done(); ctl.crashLoop(loadCtx, t, rand.New(rand.NewPCG(uint64(seed), 2)), p) }()
	go func() { defer wg.Done(); progressLoop(loadCtx, t, p, tal, ctl) }()
	wg.Wait()
	tal.mu.Lock()
	defer tal.mu.Unlock()
	for _, f := range tal.failures {
		t.Errorf("client: %s", f)
	}
	return tal
}

// progressLoop says how the load phase is going every 10 s, so a run
// under -v is never silent for long.
func progressLoop(ctx context.Context, t *testing.T, p params, tal *tally, ctl *supervisor) {
	start := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		tal.mu.Lock()
		accepted, phases := len(tal.receipts), tal.phases
		tal.mu.Unlock()
		ctl.mu.Lock()
		restarts := ctl.restarts
		ctl.mu.Unlock()
		t.Logf("soak load %s of %s: %d receipts accepted, %d fault phases, %d kills and restarts",
			time.Since(start).Round(time.Second), p.load, accepted, phases, restarts)
	}
}

// phases are the simulator's moods the fault loop cycles through.
var phases = []sim.Faults{
	{},
	{Down: true},
	{Latency: 300 * time.Millisecond},
	{Latency: 2 * time.Second}, // beyond upstream.timeout: ambiguous attempts
	{ErrorRate: 0.4},
	{DropRate: 0.3},
	{Latency: 100 * time.Millisecond, ErrorRate: 0.2, DropRate: 0.2},
}

func faultLoop(ctx context.Context, t *testing.T, rng *rand.Rand, s *sim.Sim, tal *tally) {
	for ctx.Err() == nil {
		f := phases[rng.IntN(len(phases))]
		if err := s.SetFaults(f); err != nil {
			t.Errorf("set faults %+v: %v", f, err)
			return
		}
		tal.mu.Lock()
		tal.phases++
		tal.mu.Unlock()
		clock.Sleep(ctx, 500*time.Millisecond+time.Duration(rng.Int64N(int64(2500*time.Millisecond))))
	}
}

// supervisor owns the receiptd process across crashes.
type supervisor struct {
	bin      string
	mu       sync.Mutex
	proc     *harness.Process
	restarts int
}

func (sv *supervisor) current() *harness.Process {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.proc
}

// crashLoop SIGKILLs receiptd about p.kills times at random moments of the
// load phase and restarts it after a random pause.
func (sv *supervisor) crashLoop(ctx context.Context, t *testing.T, rng *rand.Rand, p params) {
	mean := p.load / time.Duration(p.kills+1)
	for {
		clock.Sleep(ctx, mean/2+time.Duration(rng.Int64N(int64(mean))))
		if ctx.Err() != nil {
			return
		}
		pause := time.Duration(rng.Int64N(int64(800 * time.Millisecond)))
		if err := sv.crash(ctx, pause); err != nil {
			t.Errorf("crash and restart: %v", err)
			return
		}
		t.Logf("soak: SIGKILL, restarted after a %s pause", pause.Round(time.Millisecond))
	}
}

func (sv *supervisor) crash(ctx context.Context, pause time.Duration) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if err := sv.proc.Kill(); err != nil {
		return err
	}
	clock.Sleep(ctx, pause)
	return sv.restartLocked(context.WithoutCancel(ctx))
}

func (sv *supervisor) restartLocked(ctx context.Context) error {
	p, err := harness.StartFile(ctx, sv.bin, sv.proc.ConfigPath())
	if err != nil {
		return err
	}
	sv.proc, sv.restarts = p, sv.restarts+1
	return p.WaitReady(ctx)
}

// ensureRunning restarts receiptd if it is not running.
func (sv *supervisor) ensureRunning(ctx context.Context) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	select {
	case <-sv.proc.Done():
		return sv.restartLocked(ctx)
	default:
		return sv.proc.WaitReady(ctx)
	}
}

func checkStore(t *testing.T, path string) {
	st, err := store.Open(path, store.Options{})
	require.NoError(t, err, "open the database after receiptd stopped")
	require.NoError(t, st.Check(), "database consistency")
	require.NoError(t, st.Close())
}

// status is the part of GET /receiptd/status the soak reads.
type status struct {
	Counts map[string]int `json:"counts"`
}

// waitDrained polls the status until nothing is unsent.
func waitDrained(ctx context.Context, t *testing.T, c *http.Client, url string, limit time.Duration) map[string]int {
	deadline := time.Now().Add(limit)
	lastLog := time.Now()
	var st status
	for {
		st = status{}
		require.NoError(t, testkit.GetJSON(ctx, c, url+"/receiptd/status", &st))
		unsent := st.Counts["queued"] + st.Counts["sending"] + st.Counts["held"] + st.Counts["delete_queued"]
		if unsent == 0 {
			return st.Counts
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "queue not drained", "after %s with the upstream healthy: %v", limit, st.Counts)
		}
		if time.Since(lastLog) >= 5*time.Second {
			t.Logf("soak drain: %d unsent (%v)", unsent, st.Counts)
			lastLog = time.Now()
		}
		clock.Sleep(ctx, 200*time.Millisecond)
	}
}
