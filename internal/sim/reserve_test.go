package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
)

// info reads /rest/info's leftLotteries and lastSentDate.
func info(t *testing.T, s *sim.Sim) (int, string) {
	t.Helper()
	code, _, body, err := do(t, "GET", s.URL()+"/rest/info", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	var got struct {
		LeftLotteries int    `json:"leftLotteries"`
		LastSentDate  string `json:"lastSentDate"`
	}
	require.NoError(t, json.Unmarshal(body, &got))
	return got.LeftLotteries, got.LastSentDate
}

func create(t *testing.T, s *sim.Sim, typ, suffix string) (int, []byte) {
	t.Helper()
	body := strings.Replace(fmt.Sprintf(validReceipt, suffix), `"B2C_RECEIPT"`, `"`+typ+`"`, 1)
	if strings.HasPrefix(typ, "B2B") {
		body = strings.Replace(body, `"type"`, `"customerTin":"37900846788","type"`, 1)
	}
	code, _, b, err := do(t, "POST", s.URL()+"/rest/receipt", body)
	require.NoError(t, err)
	return code, b
}

func TestReserveRunsOutAndSendDataRefillsIt(t *testing.T) {
	s := start(t, sim.Options{Seed: 3, Lotteries: 2})
	left, _ := info(t, s)
	require.Equal(t, 2, left)
	for i := range 2 {
		code, body := create(t, s, "B2C_RECEIPT", fmt.Sprintf("R%05d", i))
		require.Equal(t, http.StatusOK, code, string(body))
	}
	left, _ = info(t, s)
	require.Equal(t, 0, left)

	code, body := create(t, s, "B2C_RECEIPT", "R00009")
	require.Equal(t, http.StatusBadRequest, code)
	require.JSONEq(t, fmt.Sprintf(`{"status":"ERROR","message":%q}`, sim.ReserveEmptyMessage), string(body))
	require.Len(t, s.Receipts(), 2, "a refused receipt is not issued")

	code, body = create(t, s, "B2B_RECEIPT", "R00010")
	require.Equal(t, http.StatusOK, code, "B2B receipts carry no lottery and are not refused: %s", body)

	code, _, body, err := do(t, "GET", s.URL()+"/rest/sendData", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Equal(t, 1, s.SendDataCalls())
	left, _ = info(t, s)
	require.Equal(t, 2, left, "sendData refills the reserve")
	code, body = create(t, s, "B2C_RECEIPT", "R00011")
	require.Equal(t, http.StatusOK, code, string(body))
}

func TestSendDataFaults(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	clock := now
	s := start(t, sim.Options{Seed: 4, Lotteries: 5, Now: func() time.Time { return clock }})
	s.SetLeftLotteries(1)
	_, sentBefore := info(t, s)
	clock = now.Add(time.Hour)

	require.NoError(t, s.SetFaults(sim.Faults{SendDataFail: true}))
	code, _, body, err := do(t, "GET", s.URL()+"/rest/sendData", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, string(body), `"status":"ERROR"`)
	left, sent := info(t, s)
	require.Equal(t, 1, left, "a failed sendData refills nothing")
	require.Equal(t, sentBefore, sent, "nor moves lastSentDate")
	require.Zero(t, s.SendDataCalls())

	require.NoError(t, s.SetFaults(sim.Faults{SendDataLatency: 300 * time.Millisecond}))
	code, _, _, err = do(t, "GET", s.URL()+"/rest/sendData", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	left, sent = info(t, s)
	require.Equal(t, 5, left)
	require.Equal(t, "2026-03-01 11:00:00", sent, "lastSentDate in Ulaanbaatar time")
	// A slow sendData answers nothing to a caller that gave up, and
	// sends nothing.
	require.NoError(t, s.SetFaults(sim.Faults{SendDataLatency: 3 * time.Second}))
	client := &http.Client{Timeout: 100 * time.Millisecond}
	_, err = client.Get(s.URL() + "/rest/sendData")
	require.Error(t, err)
	require.Equal(t, 1, s.SendDataCalls())
}

func TestClockSkewFault(t *testing.T) {
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	s := start(t, sim.Options{Seed: 5, Now: func() time.Time { return now }})
	require.NoError(t, s.SetFaults(sim.Faults{ClockSkew: -5 * time.Minute}))
	code, h, body, err := do(t, "GET", s.URL()+"/rest/info", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Equal(t, "Sun, 01 Mar 2026 01:55:00 GMT", h.Get("Date"))

	code, body = create(t, s, "B2C_RECEIPT", "C00001")
	require.Equal(t, http.StatusOK, code, string(body))
	var got struct{ Date string }
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, "2026-03-01 09:55:00", got.Date, "the receipt's date is on the skewed clock, in UB time")

	_, h, _, err = do(t, "GET", s.URL()+"/sim/faults", "")
	require.NoError(t, err)
	require.NotEqual(t, "Sun, 01 Mar 2026 01:55:00 GMT", h.Get("Date"), "the /sim/ API is not skewed")
}

func TestFaultsJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want sim.Faults
	}{
		{"send data faults", `{"sendDataFail":true,"sendDataLatency":"20s"}`, sim.Faults{SendDataFail: true, SendDataLatency: 20 * time.Second}},
		{"negative skew", `{"clockSkew":"-5m"}`, sim.Faults{ClockSkew: -5 * time.Minute}},
		{"positive skew", `{"clockSkew":"90s"}`, sim.Faults{ClockSkew: 90 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f sim.Faults
			require.NoError(t, json.Unmarshal([]byte(tc.in), &f))
			require.Equal(t, tc.want, f)
			b, err := json.Marshal(f)
			require.NoError(t, err)
			var back sim.Faults
			require.NoError(t, json.Unmarshal(b, &back))
			require.Equal(t, f, back)
		})
	}
}

func TestSimAPILotteriesAndFaults(t *testing.T) {
	s := start(t, sim.Options{Seed: 6})
	code, _, body, err := do(t, "PUT", s.URL()+"/sim/lotteries", `{"left":0}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Zero(t, s.LeftLotteries())
	for _, bad := range []string{`{}`, `{"left":-1}`, `nope`} {
		code, _, _, err = do(t, "PUT", s.URL()+"/sim/lotteries", bad)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code, bad)
	}
	code, _, body, err = do(t, "PUT", s.URL()+"/sim/faults", `{"sendDataLatency":"-1s"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, code, string(body))
	code, _, body, err = do(t, "PUT", s.URL()+"/sim/faults", `{"sendDataFail":true,"clockSkew":"2m"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Equal(t, sim.Faults{SendDataFail: true, ClockSkew: 2 * time.Minute}, s.Faults())
}
