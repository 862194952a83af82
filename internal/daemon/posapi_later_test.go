package daemon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestPosAPIStartedAfterTheDaemonIsReadAtOnce: the README's PosAPI
// walkthrough, `receiptd sim -lotteries 50` started after the daemon:
// PosAPI is read within seconds of answering (not at check_every, 10m),
// so the low reserve gets its sendData. send_spread is 0s here, so the
// test times the read alone.
func TestPosAPIStartedAfterTheDaemonIsReadAtOnce(t *testing.T) {
	addr := testkit.ClosedAddr(t)
	cfg := testConfig(t, "http://"+addr)
	cfg.PosAPI.SendSpread = config.Dur(0)
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()
	require.Eventually(t, func() bool {
		_, ok := readStatus(t, d.URL()).PosAPI["leftLotteries"]
		return ok
	}, 10*time.Second, 50*time.Millisecond)
	time.Sleep(2 * time.Second) // the first reads have failed

	s := sim.New(sim.Options{Seed: 32, Lotteries: 50})
	require.NoError(t, s.Start(addr))
	defer func() { _ = s.Close() }()
	started := time.Now()
	require.Eventually(t, func() bool { return s.SendDataCalls() == 1 }, 15*time.Second, 50*time.Millisecond,
		"PosAPI started after the daemon was not read again within seconds")
	t.Logf("sendData %.1fs after PosAPI started", time.Since(started).Seconds())
}
