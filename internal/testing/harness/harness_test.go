package harness_test

import (
	"context"
	"net/http"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func TestWriteConfigRoundTrips(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:7999"
	cfg.Sync.Concurrency = 3
	cfg.Sync.MinBackoff = config.Dur(50 * time.Millisecond)
	cfg.Auth.Token = config.NewSecret("a-token-written-in-clear")
	path := filepath.Join(t.TempDir(), "c.toml")
	require.NoError(t, harness.WriteConfig(path, cfg))
	got, err := config.Load(path)
	require.NoError(t, err)
	require.Equal(t, cfg, got)
}

// TestFreeAddrNeverTwice: the kernel hands a closed port out again soon;
// FreeAddr does not, so tills started at once never share a port.
func TestFreeAddrNeverTwice(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		addr, err := harness.FreeAddr()
		require.NoError(t, err)
		require.False(t, seen[addr], "%s handed out twice", addr)
		seen[addr] = true
	}
}

func TestStartFileRefusesMissingConfig(t *testing.T) {
	t.Parallel()
	_, err := harness.StartFile(context.Background(), "/nonexistent/receiptd", filepath.Join(t.TempDir(), "none.toml"))
	require.Error(t, err)
}

// TestProcessLifecycle builds the real binary, starts it, crashes it,
// restarts it on the same data and stops it cleanly.
func TestProcessLifecycle(t *testing.T) {
	testkit.Parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := harness.Build(ctx, t.TempDir())
	require.NoError(t, err)

	s := sim.New(sim.Options{Seed: 1})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = s.URL(), s.URL()
	dir := t.TempDir()

	p, err := harness.Start(ctx, bin, dir, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill() }) // a failure below leaves no daemon running
	require.NotContains(t, p.URL(), ":0", "a free port replaces port 0")
	require.NoError(t, p.WaitReady(ctx))
	if runtime.GOOS == "linux" {
		rss, err := p.RSS()
		require.NoError(t, err)
		require.Greater(t, rss, int64(1<<20))
	}
	require.NoError(t, p.Kill())
	require.NoError(t, p.Kill(), "Kill may be called again")
	require.NoError(t, p.Stop(ctx), "Stop after Kill is nil: the caller ended it")
	_, err = http.Get(p.URL() + "/healthz")
	require.Error(t, err, "a killed daemon answers nothing")

	p2, err := harness.StartFile(ctx, bin, p.ConfigPath())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p2.Kill() })
	require.Equal(t, p.URL(), p2.URL())
	require.NoError(t, p2.WaitReady(ctx))
	stopCtx, stopCancel := context.WithTimeout(ctx, 20*time.Second)
	defer stopCancel()
	require.NoError(t, p2.Stop(stopCtx))
	require.NoError(t, p2.Stop(stopCtx), "Stop after a clean stop is nil")
	require.Contains(t, p2.LogTail(1<<20), "ready")

	st, err := store.Open(layout.DB(cfg.DataDir), store.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Check())
	require.NoError(t, st.Close())
}

func TestWaitReadyReportsAStartupRefusal(t *testing.T) {
	testkit.Parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := harness.Build(ctx, t.TempDir())
	require.NoError(t, err)
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	db := layout.DB(cfg.DataDir)
	st, err := store.Open(db, store.Options{}) // holds the lock: the daemon must refuse
	require.NoError(t, err)
	defer st.Close()
	p, err := harness.Start(ctx, bin, t.TempDir(), cfg)
	require.NoError(t, err)
	err = p.WaitReady(ctx)
	require.ErrorIs(t, err, harness.ErrExited)
	require.Contains(t, err.Error(), db)
}
