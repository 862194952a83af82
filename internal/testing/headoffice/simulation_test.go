package headoffice_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/headoffice"
)

// EnvFleetSim turns on TestFleetSimulation, the fleet simulation of
// docs/performance.md (not in CI): RECEIPTD_FLEET_SIM=100 runs 100 tills.
// RECEIPTD_FLEET_SIM_FOR sets how long they push (default 5m).
const (
	EnvFleetSim    = "RECEIPTD_FLEET_SIM"
	EnvFleetSimFor = "RECEIPTD_FLEET_SIM_FOR"
)

// TestFleetSimulation: N tills on this machine push to one Prometheus
// every 10 s; every till is visible, no till's buffer grows, and the head
// office's CPU and memory are reported.
func TestFleetSimulation(t *testing.T) {
	var n int
	if _, err := fmt.Sscan(os.Getenv(EnvFleetSim), &n); err != nil || n <= 0 {
		t.Skipf("set %s=100 to run the fleet simulation", EnvFleetSim)
	}
	run := 5 * time.Minute
	if s := os.Getenv(EnvFleetSimFor); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, EnvFleetSimFor)
		run = d
	}
	promBin := headoffice.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), run+10*time.Minute)
	defer cancel()
	ho, err := headoffice.Start(ctx, promBin, headoffice.Options{Dir: t.TempDir(), Eval: 15 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ho.Stop() })
	up := sim.New(sim.Options{Seed: 9})
	require.NoError(t, up.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = up.Close() })
	bin, err := harness.Build(ctx, t.TempDir())
	require.NoError(t, err)

	startFleet(ctx, t, fleetSpec{bin: bin, n: n, upstream: up.URL(), write: ho.WriteURL(), interval: 10 * time.Second})
	waitVisible(ctx, t, ho, n)
	cpu0, _, err := ho.Usage(ctx)
	require.NoError(t, err)
	start := time.Now()
	time.Sleep(run)
	cpu1, rss, err := ho.Usage(ctx)
	require.NoError(t, err)

	waitVisible(ctx, t, ho, n)
	res, err := ho.Query(ctx, "max by (shop, till) (max_over_time(receiptd_fleet_buffered_samples[2m]))", time.Time{})
	require.NoError(t, err)
	worst := 0.0
	for _, r := range res {
		worst = max(worst, r.Value)
	}
	series, err := ho.Query(ctx, "count({__name__=~\"receiptd_.+\"})", time.Time{})
	require.NoError(t, err)
	elapsed := time.Since(start)
	fmt.Printf("fleet simulation: tills=%d interval=10s for %s: all visible; series at the head office %.0f; largest buffer over the last 2m %.0f samples; head office CPU %.1f%% of a core (%.1fs over %s), RSS %.0f MiB\n",
		n, elapsed.Round(time.Second), series[0].Value, worst, 100*(cpu1-cpu0)/elapsed.Seconds(), cpu1-cpu0, elapsed.Round(time.Second), rss/(1<<20))
	require.Len(t, res, n)
	// A till whose pushes keep up holds at most the interval being sent.
	require.Less(t, worst, 2*series[0].Value/float64(n), "a till's buffer is growing")
}
