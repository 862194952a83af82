package headoffice_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/fleet/fleettest"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

const (
	tillToken    = "till-token-0123456789"
	scraperToken = "scraper-token-0123456789"
)

// TestTillPushesThroughOutageAndKill runs the real binary as a till
// pushing to a strict remote-write receiver: its series arrive with the
// fleet labels; while the head office answers 503 they wait on disk; a
// kill -9 in the middle of that outage loses none of them; the next run
// sends them, oldest first. The scraper's key opens /metrics only.
func TestTillPushesThroughOutageAndKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var failing atomic.Bool
	rcv := fleettest.New(t, func(int) int {
		if failing.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	s := sim.New(sim.Options{Seed: 1})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	bin, err := harness.Build(ctx, t.TempDir())
	require.NoError(t, err)

	cfg := tillConfig(t, s.URL(), rcv.URL, map[string]string{"shop": "017", "till": "2"})
	cfg.Auth.Token, cfg.Auth.MetricsToken = config.NewSecret(tillToken), config.NewSecret(scraperToken)
	dir := t.TempDir()
	proc, err := harness.Start(ctx, bin, dir, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proc.Kill() })
	require.NoError(t, proc.WaitReady(ctx))
	defer func() {
		if t.Failed() {
			t.Logf("receiptd log (end):\n%s", proc.LogTail(4000))
		}
	}()

	require.Eventually(t, func() bool { return len(named(rcv.Samples(), "receiptd_build_info")) > 0 }, 20*time.Second, 50*time.Millisecond)
	bi := named(rcv.Samples(), "receiptd_build_info")[0]
	require.Equal(t, "017", bi.Labels["shop"])
	require.Equal(t, "2", bi.Labels["till"])
	require.NotEmpty(t, bi.Labels["instance"], "the host name by default")
	require.Contains(t, bi.Labels, "version")
	for _, smp := range rcv.Samples() {
		require.True(t, strings.HasPrefix(smp.Labels["__name__"], "receiptd_"), smp.Series())
		require.NotContains(t, smp.Series(), tillToken, "no secret is pushed")
		require.NotContains(t, smp.Series(), scraperToken, "no secret is pushed")
	}
	// The receiver keeps a push's samples before it answers, and the till
	// records its success after the answer: the status may lag a moment.
	require.Eventually(t, func() bool {
		st := status(t, proc.URL())
		return st["enabled"] == true && st["lastSuccess"] != nil
	}, 10*time.Second, 50*time.Millisecond, "status shows the push enabled and its last success")

	require.Equal(t, http.StatusOK, get(t, proc.URL()+"/metrics", scraperToken))
	require.Equal(t, http.StatusUnauthorized, get(t, proc.URL()+"/receiptd/status", scraperToken))
	require.Equal(t, http.StatusUnauthorized, get(t, proc.URL()+"/receiptd/entries", scraperToken))

	// The head office fails; the till keeps sampling onto its disk.
	failing.Store(true)
	outageFrom := time.Now()
	require.Eventually(t, func() bool {
		b, _ := status(t, proc.URL())["bufferedSamples"].(float64)
		return b > 0 && time.Since(outageFrom) > 4*time.Second
	}, 20*time.Second, 100*time.Millisecond)
	require.NotNil(t, status(t, proc.URL())["oldestBuffered"])
	require.NoError(t, proc.Kill())
	killedAt := time.Now()

	proc, err = harness.Start(ctx, bin, dir, proc.Config())
	require.NoError(t, err)
	require.NoError(t, proc.WaitReady(ctx))
	failing.Store(false)
	require.Eventually(t, func() bool {
		b, _ := status(t, proc.URL())["bufferedSamples"].(float64)
		return b == 0 && inWindow(rcv.Samples(), outageFrom, killedAt) >= 3
	}, 30*time.Second, 100*time.Millisecond, "the outage's samples arrive after the restart")
	n := inWindow(rcv.Samples(), outageFrom, killedAt)
	t.Logf("outage of %s before kill -9: %d intervals of receiptd_build_info delivered afterwards", killedAt.Sub(outageFrom).Round(time.Second), n)
	require.GreaterOrEqual(t, n, int(killedAt.Sub(outageFrom)/time.Second)-1, "at most the last interval is lost")
	require.NoError(t, proc.Stop(ctx))
}

// tillConfig is a till on loopback with the tax service at upstream and
// the head office at write, pushing every second.
func tillConfig(t *testing.T, upstream, write string, labels map[string]string) config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL, cfg.Upstream.StockBaseURL = upstream, upstream, upstream
	cfg.Log.Level = "warn"
	cfg.Fleet.RemoteWriteURL = write
	cfg.Fleet.Interval = config.Dur(time.Second)
	cfg.Fleet.Labels = labels
	return cfg
}

func named(samples []fleettest.Sample, name string) []fleettest.Sample {
	var out []fleettest.Sample
	for _, s := range samples {
		if s.Labels["__name__"] == name {
			out = append(out, s)
		}
	}
	return out
}

// inWindow counts the distinct sample times of receiptd_build_info in
// [from, to].
func inWindow(samples []fleettest.Sample, from, to time.Time) int {
	seen := map[int64]bool{}
	for _, s := range named(samples, "receiptd_build_info") {
		if s.TS >= from.UnixMilli() && s.TS <= to.UnixMilli() {
			seen[s.TS] = true
		}
	}
	return len(seen)
}

func get(t *testing.T, url, token string) int {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// status returns /receiptd/status's "fleet".
func status(t *testing.T, base string) map[string]any {
	req, err := http.NewRequest(http.MethodGet, base+"/receiptd/status", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tillToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var st struct {
		Fleet map[string]any `json:"fleet"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st.Fleet
}
