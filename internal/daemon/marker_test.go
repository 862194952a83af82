package daemon_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// markerTx is the transaction the data directory's marker records. On
// Windows a read that meets the running daemon's replace of the marker
// fails with a sharing violation: it is tried again for a second.
func markerTx(t *testing.T, dir string) uint64 {
	t.Helper()
	var b []byte
	var err error
	for range 50 {
		if b, err = os.ReadFile(layout.Marker(dir)); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "tx "); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no tx line in the marker: %q", b)
	return 0
}

// TestMarkerSavedAfterCommits: the marker follows the receipts committed
// while the daemon runs (markerEvery after a commit), not only at stop, and
// is not rewritten while nothing is committed.
func TestMarkerSavedAfterCommits(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{Seed: 3})
	cfg := testConfig(t, s.URL())
	d, err := daemon.New(cfg, zap.NewNop(), "test")
	require.NoError(t, err)
	daemon.SetMarkerEvery(d, 50*time.Millisecond)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	// settled waits until the marker stays put for 300 ms (six intervals):
	// start-up, sending and the cache's warm-up have stopped committing.
	settled := func() uint64 {
		var last uint64
		require.Eventually(t, func() bool {
			n := markerTx(t, cfg.DataDir)
			still := n == last
			last = n
			return still
		}, 10*time.Second, 300*time.Millisecond)
		return last
	}
	before := settled()
	for i := range 3 {
		resp, b := post(t, d.URL(), testkit.Receipt(fmt.Sprintf("mk%04d", i)))
		require.Equal(t, 2, resp.StatusCode/100, "%s", b) // the answer itself (200) or 202
	}
	require.Eventually(t, func() bool { return markerTx(t, cfg.DataDir) > before }, 5*time.Second, 10*time.Millisecond,
		"the marker records the receipts' commits while running")
	after := settled()
	info, err := os.Stat(layout.Marker(cfg.DataDir))
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // six marker intervals without a commit
	again, err := os.Stat(layout.Marker(cfg.DataDir))
	require.NoError(t, err)
	require.Equal(t, after, markerTx(t, cfg.DataDir))
	require.Equal(t, info.ModTime(), again.ModTime(), "not rewritten while nothing is committed")
}
