package daemon_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestWarmBeforeTheFirstOutage: a daemon that has been online once, with
// no POS having asked anything, answers every lookup a till needs from the
// cache once the tax service is gone, and a POS that looks up the buyer's
// merchant info before each sale (as the Go client does) can still sell.
func TestWarmBeforeTheFirstOutage(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 5})
	cfg := testConfig(t, s.URL())
	cfg.Accept.Wait = config.Dur(200 * time.Millisecond)
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	require.Eventually(t, func() bool {
		_, page := getBody(t, d.URL()+"/")
		return strings.Contains(string(page), "Ready for an outage")
	}, 20*time.Second, 50*time.Millisecond, "the status page says when the cache is warm")
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))

	cached := func(path string) []byte {
		t.Helper()
		resp, body := getBody(t, d.URL()+path)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
		require.Contains(t, []string{"HIT", "STALE"}, resp.Header.Get("X-Cache"), path)
		return body
	}
	for _, p := range warmPaths(t, cached) {
		cached(p)
	}

	// The Go client's flow: getInfo for the buyer, then the receipt.
	var merchant struct {
		Status int `json:"status"`
		Data   struct {
			Name  string `json:"name"`
			Found bool   `json:"found"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(cached("/api/info/check/getInfo?tin="+sim.SampleMerchantTin), &merchant))
	require.Equal(t, 200, merchant.Status)
	require.True(t, merchant.Data.Found)
	resp, body := post(t, d.URL(), string(sim.SampleReceipt("WARM-1", "000001")))
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", body)
	var queued struct{ QueueID, State string }
	require.NoError(t, json.Unmarshal(body, &queued))
	require.NotEmpty(t, queued.QueueID)
	require.Contains(t, []string{"queued", "sending"}, queued.State)
	require.Equal(t, 0, len(s.Receipts()), "offline: nothing issued yet")

	require.NoError(t, s.SetFaults(sim.Faults{}))
	require.Eventually(t, func() bool { return len(s.Receipts()) == 1 }, 20*time.Second, 20*time.Millisecond,
		"the queued sale is issued once the tax service is back")
}

// warmPaths lists the lookups of the warm set as the cached /rest/info and
// classification top level name them (cached answers one from the cache).
func warmPaths(t *testing.T, cached func(path string) []byte) []string {
	t.Helper()
	var info struct {
		Merchants []struct {
			TIN       string `json:"tin"`
			Customers []struct {
				TIN string `json:"tin"`
			} `json:"customers"`
		} `json:"merchants"`
	}
	require.NoError(t, json.Unmarshal(cached("/rest/info"), &info))
	require.NotEmpty(t, info.Merchants)
	var top [][]string
	require.NoError(t, json.Unmarshal(cached("/api/info/check/barcode/v2"), &top))
	require.NotEmpty(t, top)
	paths := []string{"/api/info/check/getBranchInfo", "/api/receipt/receipt/getProductTaxCode"}
	for _, row := range top {
		paths = append(paths, "/api/info/check/barcode/v2/"+row[0])
	}
	for _, m := range info.Merchants {
		paths = append(paths, "/rest/bankAccounts?tin="+m.TIN, "/api/info/check/getInfo?tin="+m.TIN)
		for _, c := range m.Customers {
			paths = append(paths, "/api/info/check/getInfo?tin="+c.TIN)
		}
	}
	return paths
}
