package daemon_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestUpdateStateReachesStatusMetricsAndPage (issue 39, item 9): a real
// update.json in the data directory, a release rolled back after two
// refusals, shows in /receiptd/status's update (beside version), in the
// receiptd_update_* series and as a card on the page; each read leaves
// the file as it was. A file rewritten meanwhile is read again.
func TestUpdateStateReachesStatusMetricsAndPage(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	cfg := testConfig(t, s.URL())
	// An hour ago, not a fixed date: the card shows for a week after.
	at := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	st := release.State{Running: &release.Version{Version: "1.1.0", SHA256: "aa11", Path: "/v/1.1.0/receiptd"},
		Previous: &release.Version{}, RolledBack: []string{"0ld0"}}
	st.Enter(release.Refused, "refused (key): not a trusted key", at)
	st.Enter(release.Refused, "refused (version): 1.0.0 is not newer than 1.1.0", at)
	st.Offered = &release.Version{Version: "1.2.0", SHA256: "bb22", Path: "/v/1.2.0/receiptd"}
	st.RollBack("it stopped during its probation: exit status 3", at)
	require.NoError(t, st.Write(cfg.DataDir))
	written, err := os.ReadFile(layout.Update(cfg.DataDir))
	require.NoError(t, err)

	d, err := daemon.New(cfg, zaptest.NewLogger(t), "1.1.0")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	_, body := getBody(t, d.URL()+"/receiptd/status")
	var status struct {
		Version string                     `json:"version"`
		Alert   string                     `json:"alert"`
		Update  map[string]json.RawMessage `json:"update"`
	}
	require.NoError(t, json.Unmarshal(body, &status), string(body))
	require.Equal(t, "1.1.0", status.Version)
	require.Equal(t, "warn", status.Alert, "the rollback's card is a warning")
	want := map[string]string{
		"state":    `"rolled_back"`,
		"message":  `"rolled back: it stopped during its probation: exit status 3"`,
		"since":    `"` + at.Format(time.RFC3339) + `"`,
		"running":  `{"version":"1.1.0","sha256":"aa11","path":"/v/1.1.0/receiptd"}`,
		"previous": `{"version":""}`,
		"offered":  `{"version":"1.2.0","sha256":"bb22","path":"/v/1.2.0/receiptd"}`,
	}
	got := map[string]string{}
	for k, v := range status.Update {
		got[k] = string(v)
	}
	require.Equal(t, want, got)

	fams := scrapeMetrics(t, d.URL())
	require.Equal(t, 2.0, fams["receiptd_update_rollbacks_total"].GetMetric()[0].GetCounter().GetValue(), "two hashes in rolled_back")
	require.Equal(t, 2.0, fams["receiptd_update_refusals_total"].GetMetric()[0].GetCounter().GetValue())
	require.Equal(t, 1001000.0, fams["receiptd_update_running_version_number"].GetMetric()[0].GetGauge().GetValue())
	info := fams["receiptd_update_running_info"].GetMetric()[0]
	require.Equal(t, "1.1.0", info.GetLabel()[0].GetValue())
	for _, m := range fams["receiptd_update_state"].GetMetric() {
		want := 0.0
		if m.GetLabel()[0].GetValue() == "rolled_back" {
			want = 1
		}
		require.Equal(t, want, m.GetGauge().GetValue(), m.GetLabel()[0].GetValue())
	}

	_, page := getBody(t, d.URL()+"/")
	require.Contains(t, string(page), "receiptd 1.2.0 was rolled back: this till runs receiptd 1.1.0 again")
	require.Contains(t, string(page), `id="update"`)

	after, err := os.ReadFile(layout.Update(cfg.DataDir))
	require.NoError(t, err)
	require.Equal(t, written, after, "status, metrics and page only read update.json")

	// A third refusal recorded by `update apply` is in the next scrape.
	st.Enter(release.Refused, "refused (signature): the signature does not verify", at.Add(time.Hour))
	require.NoError(t, st.Write(cfg.DataDir))
	fams = scrapeMetrics(t, d.URL())
	require.Equal(t, 3.0, fams["receiptd_update_refusals_total"].GetMetric()[0].GetCounter().GetValue())

	// A damaged update.json is never guessed: state unknown with why, and
	// no update series.
	require.NoError(t, os.WriteFile(layout.Update(cfg.DataDir), []byte("{"), 0o644))
	_, body = getBody(t, d.URL()+"/receiptd/status")
	var damaged struct {
		Update struct{ State, Message string } `json:"update"`
	}
	require.NoError(t, json.Unmarshal(body, &damaged))
	require.Equal(t, "unknown", damaged.Update.State)
	require.Contains(t, damaged.Update.Message, "update.json")
	require.Nil(t, scrapeMetrics(t, d.URL())["receiptd_update_refusals_total"])
}

func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}
