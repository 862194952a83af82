package sharedposapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// EnvSharedPosAPI turns on TestSharedPosAPI (a CI step of its own: it
// runs 40 receiptd processes for about three minutes).
const EnvSharedPosAPI = "RECEIPTD_SHARED_POSAPI"

// tills is the daemons on each PosAPI.
const tills = 20

func TestMain(m *testing.M) { testkit.Main(m) }

// TestSharedPosAPI: 20 tills on one PosAPI, twice over (each phase its
// own simulator and tills, run side by side to keep the step short).
func TestSharedPosAPI(t *testing.T) {
	if os.Getenv(EnvSharedPosAPI) != "1" {
		t.Skipf("set %s=1 to run 40 receiptd processes on two simulated PosAPIs (about 2.5 minutes)", EnvSharedPosAPI)
	}
	testkit.Binary(t) // build once, before the phases race for it
	t.Run("one need, one sendData", func(t *testing.T) {
		t.Parallel()
		oneNeed(t)
	})
	t.Run("others empty the reserve in about 2 minutes", func(t *testing.T) {
		t.Parallel()
		othersSpend(t)
	})
}

// oneNeed: the reserve is below min_lotteries when 20 tills start on it,
// with the default send_spread (30s): at most 2 sendData calls in all.
func oneNeed(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{Seed: 30, Lotteries: 1000})
	s.SetLeftLotteries(100) // posapi.min_lotteries is 200
	procs := startTills(t, s, func(*config.Config) {})
	// Every till read the need at its start and waits at most 30s.
	deadline := time.Now().Add(config.Default().PosAPI.SendSpread.Duration + 10*time.Second)
	require.Eventually(t, func() bool { return s.SendDataCalls() >= 1 }, time.Until(deadline), 200*time.Millisecond,
		"no till asked PosAPI to send its data")
	time.Sleep(time.Until(deadline))
	calls := s.Requests(sim.RouteSendData)
	t.Logf("shared posapi e2e totals: one need, %d tills: %d sendData calls", tills, calls)
	require.LessOrEqual(t, calls, 2, "20 tills, one need: at most 2 sendData calls")
	for _, p := range procs {
		st := status(t, p)
		require.EqualValues(t, 1000, st.LeftLotteries, "%s: the refill is seen", p.URL())
	}
}

// othersSpend: other POS software spends the reserve of 1100 at 9 a
// second (empty in about 2 minutes) while the 20 tills sell B2C receipts,
// check_every at its 10m: a sendData comes before the reserve is empty,
// no B2C receipt of any till is refused for an empty reserve, and every
// till says shared.
func othersSpend(t *testing.T) {
	const reserve = 1100
	pace := 9.0 // lotteries a second
	s := testkit.StartSim(t, sim.Options{Seed: 31, Lotteries: reserve})
	require.NoError(t, s.SetFaults(sim.Faults{OtherPace: pace}))
	started := time.Now()
	emptyIn := time.Duration(float64(reserve) / pace * float64(time.Second))
	emptyBy := started.Add(emptyIn)
	procs := startTills(t, s, func(c *config.Config) {
		c.PosAPI.SendSpread = config.Dur(10 * time.Second)
		c.PosAPI.SendEvery = config.Dur(40 * time.Second)
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	var minLeft = reserve
	var firstSend time.Time
	go func() { // the reserve, watched
		defer wg.Done()
		for ctx.Err() == nil {
			minLeft = min(minLeft, s.LeftLotteries())
			if firstSend.IsZero() && s.SendDataCalls() > 0 {
				firstSend = time.Now()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	sold := make(chan int, 1)
	go func() { // every till sells a B2C receipt every 10s
		defer wg.Done()
		sold <- sell(ctx, t, procs)
	}()
	time.Sleep(time.Until(emptyBy.Add(20 * time.Second)))
	cancel()
	wg.Wait()
	n := <-sold
	stats := s.LotteryStats()
	t.Logf("shared posapi e2e totals: others' pace %.0f/s, reserve %d: first sendData %.0fs after start (empty at %.0fs), "+
		"%d sendData calls in %.0fs, lowest reserve %d, others spent %d, %d B2C receipts sold, %d refused for an empty reserve",
		pace, reserve, firstSend.Sub(started).Seconds(), emptyBy.Sub(started).Seconds(), stats.SendData,
		time.Since(started).Seconds(), minLeft, stats.OthersSpent, n, stats.RefusedEmpty)
	require.False(t, firstSend.IsZero(), "no sendData at all")
	require.True(t, firstSend.Before(emptyBy), "the sendData came after the reserve would have been empty")
	require.Positive(t, minLeft, "the reserve ran empty")
	require.Zero(t, stats.RefusedEmpty, "a B2C receipt was refused for an empty reserve")
	for _, p := range procs {
		require.Eventually(t, func() bool {
			st := status(t, p)
			return st.Counts["sent"] > 0 && st.Counts["queued"]+st.Counts["sending"]+st.Counts["held"] == 0
		},
			20*time.Second, 200*time.Millisecond, "%s: every receipt sent", p.URL())
		st := status(t, p)
		require.True(t, st.Shared, "%s: shared", p.URL())
		require.Zero(t, st.Counts["rejected"], "%s", p.URL())
		require.NotNil(t, st.PacePerHour, "%s", p.URL())
		require.Greater(t, *st.PacePerHour, pace*3600/2, "%s: PosAPI's pace seen", p.URL())
	}
}

// startTills starts 20 daemons on s at once, each with the test's
// config changes on top of testkit.Config's.
func startTills(t *testing.T, s *sim.Sim, change func(*config.Config)) []*harness.Process {
	t.Helper()
	procs := make([]*harness.Process, tills)
	var wg sync.WaitGroup
	for i := range procs {
		cfg := testkit.Config(t, s.URL())
		cfg.Upstream.StockBaseURL = s.URL()
		change(&cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i] = testkit.Daemon(t, cfg)
		}()
	}
	wg.Wait()
	for _, p := range procs {
		require.NotNil(t, p, "a till did not start")
	}
	return procs
}

// sell posts a B2C receipt to each till in turn, one every 500ms, until
// ctx ends; every one must be accepted (200 issued, or 202 queued).
func sell(ctx context.Context, t *testing.T, procs []*harness.Process) int {
	n := 0
	for ctx.Err() == nil {
		p := procs[n%len(procs)]
		resp, err := http.Post(p.URL()+"/rest/receipt", "application/json", strings.NewReader(testkit.Receipt(fmt.Sprintf("S%05d", n))))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
				t.Errorf("%s: receipt %d answered %d", p.URL(), n, resp.StatusCode)
			}
		} else {
			t.Errorf("%s: receipt %d: %v", p.URL(), n, err)
		}
		n++
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	return n
}

// tillStatus is what the test reads of /receiptd/status.
type tillStatus struct {
	Counts        map[string]int
	LeftLotteries int64
	PacePerHour   *float64
	Shared        bool
}

func status(t *testing.T, p *harness.Process) tillStatus {
	t.Helper()
	resp, err := http.Get(p.URL() + "/receiptd/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Counts map[string]int `json:"counts"`
		PosAPI struct {
			LeftLotteries *int64   `json:"leftLotteries"`
			PacePerHour   *float64 `json:"pacePerHour"`
			Shared        bool     `json:"shared"`
		} `json:"posapi"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	st := tillStatus{Counts: body.Counts, PacePerHour: body.PosAPI.PacePerHour, Shared: body.PosAPI.Shared}
	if body.PosAPI.LeftLotteries != nil {
		st.LeftLotteries = *body.PosAPI.LeftLotteries
	}
	return st
}
