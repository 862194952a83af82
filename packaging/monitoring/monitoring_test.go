// Package monitoring_test keeps the alert rules and the Grafana dashboard in
// this folder honest: every receiptd metric they name, and every state or
// route they select, must appear in the /metrics of a real daemon, so a
// renamed metric fails here instead of silencing an alert in a shop.
package monitoring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"
	"go.yaml.in/yaml/v3"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/fleet/fleettest"
	"github.com/receiptd/receiptd/internal/sim"
)

// ruleExprs reads the expr of every rule in the rules file.
func ruleExprs(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &f))
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Expr, "rule %s%s has no expr", r.Alert, r.Record)
			out = append(out, r.Expr)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// dashboardExprs reads the expr of every panel target in the dashboard.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	var out []string
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out
}

var (
	metricName = regexp.MustCompile(`\breceiptd_[a-zA-Z0-9_]+`)
	// matcher finds label="v" and label=~"a|b" in a selector.
	matcher = regexp.MustCompile(`\b(state|route|outcome|kind|result)(=~?)"([^"]*)"`)
)

// scrapeRealDaemon runs a daemon against the simulator, as `receiptd run`
// does (daemon.NewManaged), with the push and [control] on (pointing at a
// real OpAMP server), makes it send, get a refusal and serve a lookup, so
// that series created on first use exist, and returns its /metrics.
func scrapeRealDaemon(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	s := sim.New(sim.Options{Seed: 5})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	cfg := config.Default()
	cfg.DataDir, cfg.Listen = t.TempDir(), "127.0.0.1:0"
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = s.URL(), s.URL()
	// The push on, so its series (receiptd_fleet_*) exist too.
	cfg.Fleet.RemoteWriteURL = fleettest.New(t, nil).URL
	// The head office channel on, so its series (receiptd_control_*) exist.
	cfg.Control.OpAMPURL = controltest.Start(t).WSURL()
	// A release's version, so that receiptd_update_running_version_number
	// (absent for a build from source) is exported too.
	d, err := daemon.NewManaged(cfg, "", zaptest.NewLogger(t), "1.0.0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})

	post := func(suffix string) int {
		body := strings.NewReader(string(sim.SampleReceipt("POS-1", suffix)))
		resp, err := http.Post(d.URL()+"/rest/receipt", "application/json", body)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, post("000001"))
	require.NoError(t, s.SetFaults(sim.Faults{RejectNext: 1}))
	require.Equal(t, http.StatusBadRequest, post("000002"))
	resp, err := http.Get(d.URL() + "/api/info/check/getBranchInfo")
	require.NoError(t, err)
	resp.Body.Close()

	var fams map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		resp, err := http.Get(d.URL() + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err = p.TextToMetricFamilies(resp.Body)
		return err == nil && fams["receiptd_unsent_alert_level"] != nil && fams["receiptd_posapi_left_lotteries"] != nil &&
			fams["receiptd_clock_skew_seconds"] != nil &&
			fams["receiptd_fleet_last_success_timestamp_seconds"] != nil &&
			fams["receiptd_control_connected"] != nil
	}, 10*time.Second, 50*time.Millisecond)
	return fams
}

// exported is every series name /metrics shows, histogram and summary
// parts included, and every value each label takes.
func exported(fams map[string]*dto.MetricFamily) (names map[string]bool, values map[string][]string) {
	names, values = map[string]bool{}, map[string][]string{}
	for name, f := range fams {
		names[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(values[l.GetName()], l.GetValue()) {
					values[l.GetName()] = append(values[l.GetName()], l.GetValue())
				}
			}
		}
	}
	return names, values
}

func TestRulesAndDashboardUseExportedMetrics(t *testing.T) {
	names, values := exported(scrapeRealDaemon(t))
	exprs := map[string][]string{
		"receiptd-rules.yml":         ruleExprs(t, "receiptd-rules.yml"),
		"receiptd-control-rules.yml": ruleExprs(t, "receiptd-control-rules.yml"),
		"receiptd-dashboard.json":    dashboardExprs(t, "receiptd-dashboard.json"),
	}
	for file, list := range exprs {
		used := 0
		for _, e := range list {
			for _, n := range metricName.FindAllString(e, -1) {
				used++
				require.True(t, names[n], "%s: %s names %s, which receiptd does not export", file, e, n)
			}
			for _, m := range matcher.FindAllStringSubmatch(e, -1) {
				want := []string{m[3]}
				if m[2] == "=~" {
					want = strings.Split(m[3], "|")
				}
				for _, v := range want {
					require.Contains(t, values[m[1]], v, "%s: %s selects %s=%q, a value receiptd does not export", file, e, m[1], v)
				}
			}
		}
		require.Positive(t, used, "%s names no receiptd metric", file)
	}
}

// TestExtractionCatchesDrift: the check above fails on a name receiptd
// does not export, and on a state it does not know.
func TestExtractionCatchesDrift(t *testing.T) {
	names := map[string]bool{"receiptd_queue_entries": true}
	values := map[string][]string{"state": {"held", "rejected"}}
	var missing []string
	for _, e := range []string{`receiptd_queue_entrys{state="held"} > 0`, `receiptd_queue_entries{state=~"held|on_hold"}`} {
		for _, n := range metricName.FindAllString(e, -1) {
			if !names[n] {
				missing = append(missing, n)
			}
		}
		for _, m := range matcher.FindAllStringSubmatch(e, -1) {
			for _, v := range strings.Split(m[3], "|") {
				if !slices.Contains(values[m[1]], v) {
					missing = append(missing, fmt.Sprintf("%s=%s", m[1], v))
				}
			}
		}
	}
	require.Equal(t, []string{"receiptd_queue_entrys", "state=on_hold"}, missing)
}
