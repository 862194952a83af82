package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// runSupervisor starts a Supervisor over cfg and stops it when the test
// ends, requiring Run to return nil.
func runSupervisor(t *testing.T, cfg config.Config, rollbackAfter time.Duration) *daemon.Supervisor {
	t.Helper()
	s, err := daemon.NewSupervisor(cfg, zaptest.NewLogger(t), "test", rollbackAfter)
	require.NoError(t, err)
	return serveSupervisor(t, s)
}

// serveSupervisor runs s until the test ends, requiring Run to return nil,
// and returns it once it answers /readyz.
func serveSupervisor(t *testing.T, s *daemon.Supervisor) *daemon.Supervisor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("Supervisor.Run did not return after cancel")
		}
	})
	require.Eventually(t, func() bool { return readyz(s.URL()) == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
	return s
}

func readyz(url string) int {
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// statusTotal is the number of entries /receiptd/status counts.
func statusTotal(t *testing.T, url string) int {
	t.Helper()
	_, body := getBody(t, url+"/receiptd/status")
	var st struct {
		Counts map[string]int `json:"counts"`
	}
	require.NoError(t, json.Unmarshal(body, &st))
	n := 0
	for _, c := range st.Counts {
		n += c
	}
	return n
}

// poster posts receipts until stopped, each until it gets an HTTP answer
// (a POS sends the same receipt again after a connection error; the
// idempotency key makes that safe).
type poster struct {
	url        string
	posted     atomic.Int64
	connErrors atomic.Int64
	slowest    atomic.Int64 // nanoseconds, one POST's longest wait (retries included)
	mu         sync.Mutex
	statuses   map[int]int
}

func (p *poster) run(ctx context.Context, worker int) {
	for i := 0; ctx.Err() == nil; i++ {
		body := testkit.Receipt(fmt.Sprintf("s%d-%d", worker, i))
		began := time.Now()
		for {
			resp, err := http.Post(p.url+"/rest/receipt", "application/json", strings.NewReader(body))
			if err != nil {
				p.connErrors.Add(1)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			_ = resp.Body.Close()
			p.mu.Lock()
			p.statuses[resp.StatusCode]++
			p.mu.Unlock()
			break
		}
		if d := int64(time.Since(began)); d > p.slowest.Load() {
			p.slowest.Store(d)
		}
		p.posted.Add(1)
	}
}

func TestSupervisorSwapUnderConcurrentPostsStoresEachReceiptOnce(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 7})
	cfg := testConfig(t, s.URL())
	sup := runSupervisor(t, cfg, 10*time.Second)

	p := &poster{url: sup.URL(), statuses: map[int]int{}}
	ctx, stopPosting := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.run(ctx, w)
		}()
	}
	const swaps = 6
	var slowestApply time.Duration
	for i := range swaps {
		time.Sleep(150 * time.Millisecond)
		next := cfg
		next.Sync.MaxBackoff = config.Dur(time.Duration(100+i) * time.Millisecond)
		began := time.Now()
		require.NoError(t, sup.Apply(context.Background(), next), "swap %d", i)
		slowestApply = max(slowestApply, time.Since(began))
		require.Equal(t, next.Sync.MaxBackoff, sup.Config().Sync.MaxBackoff)
	}
	time.Sleep(150 * time.Millisecond)
	stopPosting()
	wg.Wait()

	posted := int(p.posted.Load())
	require.Eventually(t, func() bool { return len(s.Receipts()) >= posted }, 20*time.Second, 20*time.Millisecond)
	seen := map[string]int{}
	for _, r := range s.Receipts() {
		seen[r.BillIDSuffix]++
	}
	for suffix, n := range seen {
		require.Equal(t, 1, n, "receipt %s issued %d times", suffix, n)
	}
	require.Len(t, seen, posted, "every receipt posted is issued")
	require.Equal(t, posted, statusTotal(t, sup.URL()), "every receipt posted is stored once")
	t.Logf("%d receipts through %d swaps: slowest Apply %s, slowest POST %s, connection errors %d, answers %v",
		posted, swaps, slowestApply, time.Duration(p.slowest.Load()), p.connErrors.Load(), p.statuses)
}

func TestSupervisorAppliedConfigChangesBehaviour(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 8})
	cfg := testConfig(t, s.URL())
	cfg.Accept.Wait = config.Dur(50 * time.Millisecond)
	sup := runSupervisor(t, cfg, 10*time.Second)
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))

	resp, body := post(t, sup.URL(), testkit.Receipt("b1"))
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(body))

	next := cfg
	next.Accept.QueuedAnswer = "error"
	require.NoError(t, sup.Apply(context.Background(), next))
	resp, body = post(t, sup.URL(), testkit.Receipt("b2"))
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(body))
	require.Equal(t, 2, statusTotal(t, sup.URL()), "the receipt queued before the swap is still there")
}

func TestSupervisorRefusesOrRollsBack(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 9})
	cfg := testConfig(t, s.URL())
	const rollbackAfter = 300 * time.Millisecond
	sup := runSupervisor(t, cfg, rollbackAfter)
	blocker := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))

	tests := []struct {
		name   string
		change func(*config.Config)
		want   []string
	}{
		{"backup dir it cannot create", func(c *config.Config) { c.Backup.Dir = filepath.Join(blocker, "snapshots") },
			[]string{"backup.dir", "not ready within"}},
		{"a bad value", func(c *config.Config) { c.Accept.QueuedAnswer = "maybe" }, []string{"queued_answer"}},
		{"listen moved", func(c *config.Config) { c.Listen = "127.0.0.1:1" }, []string{"listen", "restart"}},
		{"data_dir moved", func(c *config.Config) { c.DataDir = t.TempDir() }, []string{"data_dir", "restart"}},
	}
	for i, tc := range tests {
		next := cfg
		tc.change(&next)
		began := time.Now()
		err := sup.Apply(context.Background(), next)
		took := time.Since(began)
		require.Error(t, err, tc.name)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, tc.name)
		}
		require.Equal(t, cfg, sup.Config(), "%s: the previous config runs", tc.name)
		resp, body := post(t, sup.URL(), testkit.Receipt(fmt.Sprintf("r%d", i)))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", tc.name, body)
		t.Logf("%s: refused in %s: %v", tc.name, took, err)
	}
	require.Equal(t, len(tests), statusTotal(t, sup.URL()))
	began := time.Now()
	require.NoError(t, sup.Apply(context.Background(), cfg), "the config in effect")
	t.Logf("the config in effect applied again in %s (no swap)", time.Since(began))
}
