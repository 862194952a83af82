package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// startDaemon runs the real daemon against the simulator, which starts
// down.
func startDaemon(t *testing.T, queuedAnswer string) (*daemon.Daemon, *sim.Sim) {
	t.Helper()
	s := sim.New(sim.Options{Seed: 3})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	cfg := daemonConfig(t, s.URL())
	cfg.Accept.QueuedAnswer = queuedAnswer
	return runDaemon(t, cfg), s
}

// daemonConfig is the configuration of a daemon in a temporary directory
// whose tax service is at upstream.
func daemonConfig(t *testing.T, upstream string) config.Config {
	cfg := config.Default()
	cfg.DataDir, cfg.Listen = t.TempDir(), "127.0.0.1:0"
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = upstream, upstream
	cfg.Sync.MinBackoff, cfg.Sync.MaxBackoff = config.Dur(20*time.Millisecond), config.Dur(100*time.Millisecond)
	return cfg
}

// runDaemon runs the real daemon until the test ends.
func runDaemon(t *testing.T, cfg config.Config) *daemon.Daemon {
	t.Helper()
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return d
}

func TestPOSClientThroughAnOutage(t *testing.T) {
	for _, mode := range []string{config.QueuedAnswer202, config.QueuedAnswerError} {
		t.Run(mode, func(t *testing.T) {
			d, s := startDaemon(t, mode)
			var out testkit.SyncBuffer
			code := make(chan int, 1)
			go func() {
				code <- run(context.Background(), []string{"-url", d.URL(), "-wait", "30s", "receipt.json"}, &out)
			}()
			require.Eventually(t, func() bool { return strings.Contains(out.String(), "QUEUED Q") }, 10*time.Second, 10*time.Millisecond)
			require.NoError(t, s.SetFaults(sim.Faults{}))
			require.Equal(t, 0, <-code, "%s", out.String())
			issued := s.Receipts()
			require.Len(t, issued, 1, "one sale, one receipt")
			require.Contains(t, out.String(), fmt.Sprintf("ISSUED id=%s lottery=%s", issued[0].ID, issued[0].Lottery))
		})
	}
}

func TestPOSClientLateAnswerIsGivenOnce(t *testing.T) {
	d, s := startDaemon(t, config.QueuedAnswer202)
	var out testkit.SyncBuffer
	// -wait 1ms: the client leaves the sale to receiptd at once.
	require.Equal(t, 1, run(context.Background(), []string{"-url", d.URL(), "-wait", "1ms", "receipt.json"}, &out))
	require.Contains(t, out.String(), "STORED Q")
	require.Contains(t, out.String(), "QUEUED Q")
	qid := strings.Fields(out.String()[strings.Index(out.String(), "QUEUED "):])[1]
	require.NoError(t, s.SetFaults(sim.Faults{}))

	var again testkit.SyncBuffer
	require.Equal(t, 0, run(context.Background(), []string{"-url", d.URL(), "-wait", "30s", "-answer", qid}, &again), "%s", again.String())
	require.Contains(t, again.String(), "ISSUED id="+s.Receipts()[0].ID)
	var third testkit.SyncBuffer
	require.Equal(t, 1, run(context.Background(), []string{"-url", d.URL(), "-answer", qid}, &third))
	require.Contains(t, third.String(), fmt.Sprintf("STORED %s - HTTP %d", qid, http.StatusGone))
}

// TestPOSClientReadsAnyRefusal: the tax service refuses with a 4xx other
// than 400 (here 403); the client reports the refusal, not a failure of
// its own.
func TestPOSClientReadsAnyRefusal(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"status":"ERROR","message":"merchantTin: not registered"}`)
	}))
	t.Cleanup(up.Close)
	d := runDaemon(t, daemonConfig(t, up.URL))
	var out testkit.SyncBuffer
	require.Equal(t, 1, run(context.Background(), []string{"-url", d.URL(), "receipt.json"}, &out))
	require.Contains(t, out.String(), "REJECTED merchantTin: not registered", out.String())
}
