package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// runManaged starts NewManaged over cfg (no own file) and stops it when
// the test ends, requiring Run to return nil.
func runManaged(t *testing.T, cfg config.Config) *daemon.Supervisor {
	t.Helper()
	s, err := daemon.NewManaged(cfg, "", zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	return serveSupervisor(t, s)
}

// managedConfig is testConfig with [control] pointing at srv.
func managedConfig(t *testing.T, upstream string, srv *controltest.Server) config.Config {
	cfg := testConfig(t, upstream)
	cfg.Control.OpAMPURL = srv.WSURL()
	cfg.Control.PollEvery = config.Dur(time.Second)
	return cfg
}

// TestManagedReportsHealthAsTheContractSays: the head office sees the
// status page's first line as the health's status, the five components,
// healthy only while the tax service is up and nothing waits too long,
// and PosAPI's posNo in the description.
func TestManagedReportsHealthAsTheContractSays(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 31})
	srv := controltest.Start(t)
	cfg := managedConfig(t, s.URL(), srv)
	cfg.Alerts.UnsentWarn = config.Dur(time.Second)
	sup := runManaged(t, cfg)
	uid := sup.Control().InstanceUID()
	components := []string{"backup", "fleet", "posapi", "queue", "upstream"}

	var a controltest.Agent
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		a, _ = srv.Agent(uid)
		if assert.NotNil(c, a.Health) {
			assert.True(c, a.Health.Healthy, "healthy: %v", a.Health)
		}
		assert.NotEmpty(c, a.Attr("posNo"), "PosAPI's posNo in the description; health %v", a.Health)
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "SIM-001", a.Attr("posNo"))
	require.Equal(t, "Nothing needs attention", a.Health.Status, "the status page's first line")
	names := make([]string, 0, len(a.Health.ComponentHealthMap))
	for name := range a.Health.ComponentHealthMap {
		names = append(names, name)
	}
	slices.Sort(names)
	require.Equal(t, components, names)
	require.Equal(t, "off", a.Health.ComponentHealthMap["fleet"].GetStatus())

	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	resp, body := post(t, sup.URL(), testkit.Receipt("h1"))
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(body))
	require.Eventually(t, func() bool {
		a, _ = srv.Agent(uid)
		return a.Health != nil && !a.Health.Healthy
	}, 20*time.Second, 50*time.Millisecond, "unhealthy once the tax service is down")
	require.Regexp(t, `^(Needs attention: |\d+ need attention; first: )`, a.Health.Status)
	require.False(t, a.Health.ComponentHealthMap["upstream"].GetHealthy())
	require.Len(t, a.Health.ComponentHealthMap, len(components))
}

// metricValue is the value of the series named exactly series (name and
// labels as /metrics writes them) in a scrape of url; -1 when absent.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, body := getBody(t, url+"/metrics")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, line)
			return f
		}
	}
	return -1
}

// TestSupervisorCountersGoOnAcrossASwap: a config applied in place
// starts no counter again from zero, neither the registry's own nor the
// totals a component reports (the write-ahead log's).
func TestSupervisorCountersGoOnAcrossASwap(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 41})
	cfg := testConfig(t, s.URL())
	sup := runSupervisor(t, cfg, 10*time.Second)
	for i := range 3 {
		resp, body := post(t, sup.URL(), testkit.Receipt(fmt.Sprintf("c%d", i)))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	}
	series := []string{
		`receiptd_receipts_accepted_total{replayed="false"}`,
		`receiptd_log_records_total`,
		`receiptd_send_attempts_total{kind="receipt",outcome="success"}`,
	}
	before := make([]float64, len(series))
	for i, name := range series {
		before[i] = metricValue(t, sup.URL(), name)
		require.GreaterOrEqual(t, before[i], 3.0, name)
	}

	next := cfg
	next.Accept.QueuedAnswer = config.QueuedAnswerError
	require.NoError(t, sup.Apply(context.Background(), next))
	for i, name := range series {
		require.GreaterOrEqual(t, metricValue(t, sup.URL(), name), before[i], "%s after the swap", name)
	}
	resp, body := post(t, sup.URL(), testkit.Receipt("c3"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, before[0]+1, metricValue(t, sup.URL(), series[0]), "the new daemon counts on")
	// The receipt's record, and its outcome's when the request was
	// already waiting as the answer came (else the outcome is a commit).
	got := metricValue(t, sup.URL(), series[1])
	require.GreaterOrEqual(t, got, before[1]+1)
	require.LessOrEqual(t, got, before[1]+2)
}
