package testkit

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// build is the binary Binary built, once per test binary.
var build struct {
	once     sync.Once
	dir, bin string
	err      error
}

// Binary returns the receiptd binary the tests run as a subprocess:
// RECEIPTD_BIN when it is set (the Windows build, where the tests run under
// Wine without a Go toolchain), else ./cmd/receiptd built once for the
// whole test binary. A package whose tests call it runs them through Main,
// which removes the build when they end.
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		if build.dir, build.err = os.MkdirTemp("", "receiptd-bin-"); build.err != nil {
			return
		}
		build.bin, build.err = harness.Build(context.Background(), build.dir)
	})
	require.NoError(t, build.err)
	return build.bin
}

// Main runs a package's tests (call it from TestMain), removes the
// binary Binary built, and runs cleanups (a package's own builds).
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	for _, c := range cleanups {
		c()
	}
	os.Exit(code)
}

// Config is a configuration for a daemon under test: the defaults, a free
// loopback port, a data directory of its own in a temporary directory of
// t, and upstream (the simulator's URL) as the tax service, PosAPI and
// lookups alike, with retries short enough for tests.
func Config(t testing.TB, upstream string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = upstream, upstream
	cfg.Sync.MinBackoff, cfg.Sync.MaxBackoff = config.Dur(50*time.Millisecond), config.Dur(time.Second)
	return cfg
}

// Daemon starts the real receiptd binary with cfg, waits until it is ready,
// and stops it when the test ends (SIGTERM; a kill if it has not exited
// cleanly in 30 seconds, which fails the test). Its log is shown when the
// start fails.
func Daemon(t testing.TB, cfg config.Config) *harness.Process {
	t.Helper()
	p, err := harness.Start(context.Background(), Binary(t), t.TempDir(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Errorf("stop receiptd: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, p.WaitReady(ctx), "log: %s", p.LogTail(4000))
	return p
}

// SimAndDaemon starts the simulator with o and a daemon under test in
// front of it, with Config's settings.
func SimAndDaemon(t testing.TB, o sim.Options) (*sim.Sim, *harness.Process) {
	t.Helper()
	s := StartSim(t, o)
	return s, Daemon(t, Config(t, s.URL()))
}

// Parallel marks a test that runs receiptd processes as one to run in
// parallel with the others, except on Windows: there harness.AskToStop
// sends Ctrl-C to every process on the console, so a test that stops a
// process must have the console to itself, and such tests run one at a
// time.
func Parallel(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "windows" {
		t.Parallel()
	}
}
