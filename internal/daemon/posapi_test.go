package daemon_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// posapiStatus is `posapi` of /receiptd/status, kept raw so a test sees
// nulls and numbers as they are.
type posapiStatus struct {
	Counts map[string]int             `json:"counts"`
	PosAPI map[string]json.RawMessage `json:"posapi"`
}

func readStatus(t *testing.T, base string) posapiStatus {
	t.Helper()
	resp, body := getBody(t, base+"/receiptd/status")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var st posapiStatus
	require.NoError(t, json.Unmarshal(body, &st))
	return st
}

// TestReserveRunsOutUnderSales: PosAPI's reserve of 4 runs out under 16
// sales from four tills at once; receiptd keeps the refused receipts
// queued, asks PosAPI to send its data itself, and every receipt is issued
// exactly once, none rejected.
func TestReserveRunsOutUnderSales(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{Seed: 24, Lotteries: 4})
	cfg := testConfig(t, s.URL())
	cfg.Accept.Wait = config.Dur(time.Second)
	cfg.PosAPI.MinLotteries = 0
	cfg.PosAPI.SendEvery = config.Dur(time.Second)
	// No random wait before each sendData: four refills, each up to
	// send_spread (30s) when /rest/info finds the reserve empty before a
	// refusal does, went past the test's wait under Wine.
	cfg.PosAPI.SendSpread = config.Dur(0)
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	const tills, sales = 4, 4
	var wg sync.WaitGroup
	codes := make(chan int, tills*sales)
	for till := range tills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range sales {
				resp, err := http.Post(d.URL()+"/rest/receipt", "application/json",
					strings.NewReader(testkit.Receipt(fmt.Sprintf("T%d-%03d", till, i))))
				if err != nil {
					codes <- 0
					continue
				}
				_ = resp.Body.Close()
				codes <- resp.StatusCode
			}
		}()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, code, "a sale waiting for the reserve is queued, never refused")
	}
	require.Eventually(t, func() bool { return readStatus(t, d.URL()).Counts["sent"] == tills*sales }, 30*time.Second, 50*time.Millisecond)

	st := readStatus(t, d.URL())
	require.Zero(t, st.Counts["rejected"])
	require.Zero(t, st.Counts["queued"]+st.Counts["held"])
	issued := map[string]int{}
	for _, r := range s.Receipts() {
		issued[r.BillIDSuffix]++
	}
	require.Len(t, issued, tills*sales)
	for suffix, n := range issued {
		require.Equal(t, 1, n, "%s issued %d times", suffix, n)
	}
	require.GreaterOrEqual(t, s.SendDataCalls(), 3, "16 sales from a reserve of 4: receiptd refilled it at least 3 times")
	require.Greater(t, s.Requests(sim.RouteCreateReceipt), tills*sales, "some sales met the empty reserve and were sent again")

	var last struct {
		At      time.Time `json:"at"`
		OK      bool      `json:"ok"`
		Message string    `json:"message"`
	}
	require.NoError(t, json.Unmarshal(st.PosAPI["lastSendData"], &last), string(st.PosAPI["lastSendData"]))
	require.True(t, last.OK)
	require.False(t, last.At.IsZero())
	var left int64
	require.NoError(t, json.Unmarshal(st.PosAPI["leftLotteries"], &left), "a JSON number: %s", st.PosAPI["leftLotteries"])
	require.GreaterOrEqual(t, left, int64(0))
	require.Contains(t, metricsText(t, d.URL()), `receiptd_send_data_total{posapi="SIM-001",result="ok"}`)
}

// TestAutoSendDataOffOnlyWarns: with posapi.auto_send_data off receiptd
// never calls sendData itself, but the status JSON and page say it is due.
func TestAutoSendDataOffOnlyWarns(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{Seed: 25, Lotteries: 150})
	cfg := testConfig(t, s.URL())
	cfg.PosAPI.AutoSendData = false
	cfg.PosAPI.SendEvery = config.Dur(time.Second)
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	require.Eventually(t, func() bool { return string(readStatus(t, d.URL()).PosAPI["leftLotteries"]) == "150" },
		10*time.Second, 20*time.Millisecond)
	st := readStatus(t, d.URL())
	require.Equal(t, "null", string(st.PosAPI["lastSendData"]))
	require.Equal(t, "null", string(st.PosAPI["lotteriesRunOutAt"]), "no sale yet: no forecast")
	require.Regexp(t, `^"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"$`, string(st.PosAPI["lastSentDate"]), "as PosAPI wrote it")
	require.Regexp(t, `^\d+$`, string(st.PosAPI["lastSentAgeSeconds"]))

	_, page := getBody(t, d.URL()+"/")
	require.Contains(t, string(page), "PosAPI should send its data to the tax authority")
	require.Contains(t, string(page), "only 150 lottery numbers are left (posapi.min_lotteries = 200)")
	require.Contains(t, string(page), "posapi.auto_send_data is off")
	time.Sleep(1500 * time.Millisecond) // past send_every: still nothing
	require.Zero(t, s.SendDataCalls())
	require.Contains(t, metricsText(t, d.URL()), `receiptd_posapi_left_lotteries{posapi="SIM-001"} 150`)
}

// TestClockSkewShows: a tax service whose clock is 5 minutes behind ours
// shows as a skew of -300 s in the status JSON and the metrics, and as a
// problem with its fix on the status page.
func TestClockSkewShows(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{Seed: 26})
	require.NoError(t, s.SetFaults(sim.Faults{ClockSkew: -5 * time.Minute}))
	d, err := daemon.New(testConfig(t, s.URL()), zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	resp, body := post(t, d.URL(), testkit.Receipt("skew1"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Eventually(t, func() bool { return string(readStatus(t, d.URL()).PosAPI["clockSkewSeconds"]) != "null" },
		10*time.Second, 20*time.Millisecond)
	var skew int64
	require.NoError(t, json.Unmarshal(readStatus(t, d.URL()).PosAPI["clockSkewSeconds"], &skew))
	require.InDelta(t, -300, skew, 2, "the tax service's clock minus ours")
	require.Regexp(t, `(?m)^receiptd_clock_skew_seconds -(299|300|301)$`, metricsText(t, d.URL()))
	_, page := getBody(t, d.URL()+"/")
	require.Contains(t, string(page), "This computer&#39;s clock is about 5 min ahead of")
	require.Contains(t, string(page), "posapi.max_clock_skew")
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, body := getBody(t, base+"/metrics")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return string(body)
}
