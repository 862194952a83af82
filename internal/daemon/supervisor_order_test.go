package daemon_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// The tests of this file hold the Supervisor in the odd orders: an Apply
// after a failed rollback, during shutdown, during another Apply, status
// reads during a swap, and the Daemon a swap retires.

// changing is the health's status while no Daemon serves (docs/contract.md).
const changing = "starting or changing its configuration"

// startSupervisor runs s until cancel, once it answers /readyz. wait
// returns Run's error (it may be called more than once); the test's
// cleanup cancels and waits.
func startSupervisor(t *testing.T, s *daemon.Supervisor) (cancel context.CancelFunc, wait func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	wait = sync.OnceValue(func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Error("Supervisor.Run did not return")
			return nil
		}
	})
	t.Cleanup(func() {
		cancel()
		_ = wait()
	})
	require.Eventually(t, func() bool { return readyz(s.URL()) == http.StatusOK }, 10*time.Second, 10*time.Millisecond)
	return cancel, wait
}

// slowSwap starts an Apply of cfg with a backup.dir that cannot be made
// (its parent is a file), so the new Daemon never becomes ready, and
// returns once the swap is under way: the old Daemon no longer serves.
// The swap ends when cancel is called (the Supervisor then rolls back) or
// after the Supervisor's rollbackAfter; applied receives Apply's error.
func slowSwap(t *testing.T, sup *daemon.Supervisor, cfg config.Config) (cancel context.CancelFunc, applied <-chan error) {
	t.Helper()
	blocker := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	next := cfg
	next.Backup.Dir = filepath.Join(blocker, "snapshots")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := make(chan error, 1)
	go func() { out <- sup.Apply(ctx, next) }()
	require.Eventually(t, func() bool { return daemon.Health(sup).Status == changing }, 10*time.Second, 5*time.Millisecond,
		"the swap began")
	return cancel, out
}

func TestSupervisorApplyAfterAFailedRollback(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows refuses to delete the open database, which is how this test makes the rollback fail")
	}
	s := testkit.StartSim(t, sim.Options{Seed: 41})
	cfg := testConfig(t, s.URL())
	sup, err := daemon.NewSupervisor(cfg, zaptest.NewLogger(t), "test", 10*time.Second)
	require.NoError(t, err)
	_, wait := startSupervisor(t, sup)
	// Neither config can open the data directory once its database is
	// gone (its marker says it held one): the swap fails, and so does
	// the rollback.
	require.NoError(t, os.Remove(sup.DBPath()))

	next := cfg
	next.Sync.MaxBackoff = config.Dur(150 * time.Millisecond)
	err = sup.Apply(context.Background(), next)
	require.ErrorIs(t, err, store.ErrMissing)
	require.ErrorContains(t, err, "the previous config could not start again")

	// The Apply right after it, before Run has returned, used to call the
	// cancel of a placeholder instance that had none.
	next.Sync.MaxBackoff = config.Dur(200 * time.Millisecond)
	require.ErrorIs(t, sup.Apply(context.Background(), next), daemon.ErrNotRunning)
	runErr := wait()
	require.ErrorIs(t, runErr, store.ErrMissing, "Run says why it stopped")
	require.ErrorIs(t, sup.Apply(context.Background(), next), daemon.ErrNotRunning, "after Run returned")
	require.Equal(t, daemon.Health(sup).Status, changing)
}

func TestSupervisorShutdownDuringASwap(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 42})
	cfg := testConfig(t, s.URL())
	sup, err := daemon.NewSupervisor(cfg, zaptest.NewLogger(t), "test", 20*time.Second)
	require.NoError(t, err)
	next := cfg
	next.Accept.QueuedAnswer = "error"
	require.ErrorIs(t, sup.Apply(context.Background(), next), daemon.ErrNotRunning, "before Run")
	stopRun, wait := startSupervisor(t, sup)
	_, applied := slowSwap(t, sup, cfg)

	stopRun()
	require.ErrorIs(t, sup.Apply(context.Background(), next), daemon.ErrNotRunning, "an Apply once shutdown began")
	require.ErrorIs(t, <-applied, daemon.ErrNotRunning, "the swap that shutdown ended")
	require.NoError(t, wait())
	require.ErrorIs(t, sup.Apply(context.Background(), next), daemon.ErrNotRunning, "after Run returned")
}

func TestSupervisorRefusesASecondApplyDuringASwap(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 43})
	cfg := testConfig(t, s.URL())
	sup := runSupervisor(t, cfg, 20*time.Second)
	cancelSwap, applied := slowSwap(t, sup, cfg)

	next := cfg
	next.Accept.QueuedAnswer = "error"
	second := make(chan error, 1)
	go func() { second <- sup.Apply(context.Background(), next) }()
	select {
	case err := <-second:
		require.ErrorIs(t, err, daemon.ErrSwapInProgress)
	case err := <-applied:
		t.Fatalf("the second Apply waited for the first to end (%v)", err)
	}
	cancelSwap()
	require.ErrorContains(t, <-applied, "cancelled")
	require.Equal(t, cfg, sup.Config(), "the previous config is back")

	require.NoError(t, sup.Apply(context.Background(), next), "once the first has ended")
	require.Equal(t, next, sup.Config())
	resp, body := post(t, sup.URL(), testkit.Receipt("twice-1"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
}

func TestSupervisorStatusReadsDoNotWaitForASwap(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 44})
	cfg := testConfig(t, s.URL())
	sup := runSupervisor(t, cfg, 20*time.Second)
	url, dbPath := sup.URL(), sup.DBPath()
	require.Eventually(t, func() bool { return daemon.PosNo(sup) != "" }, 10*time.Second, 10*time.Millisecond,
		"the first Daemon read PosAPI's posNo")
	posNo := daemon.PosNo(sup)
	cancelSwap, applied := slowSwap(t, sup, cfg)

	type reading struct {
		status, url, dbPath, posNo string
		cfg                        config.Config
	}
	read := make(chan reading, 1)
	go func() {
		read <- reading{status: daemon.Health(sup).Status, url: sup.URL(), dbPath: sup.DBPath(),
			posNo: daemon.PosNo(sup), cfg: sup.Config()}
	}()
	var got reading
	select {
	case got = <-read:
	case err := <-applied:
		t.Fatalf("the status read waited for the swap to end (%v)", err)
	}
	require.Equal(t, reading{status: changing, url: url, dbPath: dbPath, posNo: posNo, cfg: cfg}, got,
		"no Daemon serves; the config in effect is the previous one until the new one is ready")

	cancelSwap()
	require.ErrorContains(t, <-applied, "cancelled")
	resp, body := post(t, sup.URL(), testkit.Receipt("read-1"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NotEqual(t, changing, daemon.Health(sup).Status, "the previous config serves again")
}

func TestSupervisorForgetsTheRetiredDaemon(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 45})
	cfg := testConfig(t, s.URL())
	sup := runSupervisor(t, cfg, 10*time.Second)
	first := daemon.Serving(sup)
	require.NotNil(t, first.Value(), "the first Daemon serves")

	next := cfg
	next.Sync.MaxBackoff = config.Dur(150 * time.Millisecond)
	require.NoError(t, sup.Apply(context.Background(), next))
	require.NotNil(t, daemon.Serving(sup).Value(), "the new Daemon serves")
	require.Eventually(t, func() bool {
		runtime.GC()
		return first.Value() == nil
	}, 10*time.Second, 20*time.Millisecond, "the retired Daemon is still referenced")
}
