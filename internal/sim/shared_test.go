package sim_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func TestOtherPaceSpendsTheReserve(t *testing.T) {
	clk := testkit.NewManualClock(time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC))
	s := start(t, sim.Options{Seed: 3, Lotteries: 100, Now: clk.Now})
	for _, tc := range []struct {
		name  string
		pace  float64
		after time.Duration
		left  int
	}{
		{"no other software: nothing spent", 0, time.Minute, 100},
		{"2.5 a second for 10s", 2.5, 10 * time.Second, 75},
		{"the fraction carries over", 2.5, 1200 * time.Millisecond, 72},
		{"a pace that would spend more stops at empty", 100, time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, s.SetFaults(sim.Faults{OtherPace: tc.pace}))
			clk.Add(tc.after)
			left, _ := info(t, s)
			require.Equal(t, tc.left, left)
		})
	}
	code, body := create(t, s, "B2C_RECEIPT", "R00001")
	require.Equal(t, http.StatusBadRequest, code, string(body))
	code, _, body, err := do(t, "GET", s.URL()+"/sim/lotteries", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	var got sim.Lotteries
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, sim.Lotteries{Left: 0, Reserve: 100, OthersSpent: 100, RefusedEmpty: 1}, got)

	require.Error(t, s.SetFaults(sim.Faults{OtherPace: -1}), "a negative pace is refused")
	code, _, _, err = do(t, "PUT", s.URL()+"/sim/faults", `{"otherPace":3}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.InDelta(t, 3, s.Faults().OtherPace, 0)
}

func TestCreatesWaitForARunningSendData(t *testing.T) {
	s := start(t, sim.Options{Seed: 3, Lotteries: 100})
	require.NoError(t, s.SetFaults(sim.Faults{SendDataLatency: 400 * time.Millisecond}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _, _ = do(t, "GET", s.URL()+"/rest/sendData", "")
	}()
	require.Eventually(t, func() bool { return s.Requests(sim.RouteSendData) == 1 }, 2*time.Second, time.Millisecond)
	require.Zero(t, s.SendDataCalls(), "the sendData is still running")
	code, body := create(t, s, "B2C_RECEIPT", "R00002")
	require.Equal(t, http.StatusOK, code, string(body))
	require.Equal(t, 1, s.SendDataCalls(), "the create was held until the sendData had ended")
	<-done
}
