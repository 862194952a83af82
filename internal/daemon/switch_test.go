package daemon_test

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/store"
)

// TestProbationNeverMigrates: a receiptd started on probation
// (RECEIPTD_PROBATION=1, as the switch starts a release) refuses a
// database of an older schema instead of migrating it; started as usual,
// the same directory migrates and runs.
func TestProbationNeverMigrates(t *testing.T) {
	cfg := testConfig(t, "http://127.0.0.1:1")
	st, err := store.OpenDir(cfg.DataDir, store.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Update(context.Background(), func(tx *bbolt.Tx) error {
		return tx.Bucket(store.BucketMeta).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, store.SchemaVersion-1))
	}))
	require.NoError(t, st.Close())

	t.Setenv(daemon.EnvProbation, "1")
	_, err = daemon.NewSupervisor(cfg, zaptest.NewLogger(t), "test", 10*time.Second)
	require.ErrorIs(t, err, store.ErrMigrationRefused)

	t.Setenv(daemon.EnvProbation, "")
	s, err := daemon.NewSupervisor(cfg, zaptest.NewLogger(t), "test", 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	require.NoError(t, <-done)
}

// TestRequestSwitchRefusesWithoutAStagedRelease: a Supervisor not
// enabled for updates, or with nothing staged, refuses the switch
// (api.ErrUpdateRefused, POST /receiptd/update's 409) and starts nothing.
func TestRequestSwitchRefusesWithoutAStagedRelease(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "http://127.0.0.1:1")
	s, err := daemon.NewSupervisor(cfg, zaptest.NewLogger(t), "test", 10*time.Second)
	require.NoError(t, err)
	err = s.RequestSwitch()
	require.ErrorIs(t, err, api.ErrUpdateRefused)
	require.ErrorContains(t, err, "not started to take updates")

	s.EnableUpdates(daemon.Updates{Args: []string{"run"}})
	err = s.RequestSwitch()
	require.ErrorIs(t, err, api.ErrUpdateRefused)
	if runtime.GOOS == "linux" || runtime.GOOS == "windows" {
		require.ErrorContains(t, err, "no release is staged")
	} else {
		require.ErrorContains(t, err, "not built on this platform yet")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	require.NoError(t, <-done)
}
