package sim_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
)

// Issue 40: PUT /sim/faults changes only the faults it names, as README's
// PosAPI walkthrough needs (sendData failing, then the clock skewed: both
// hold); GET shows them all and DELETE clears them.
func TestPutFaultsChangesOnlyWhatItNames(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	put := func(body string) (int, string) {
		t.Helper()
		code, _, b, err := do(t, "PUT", s.URL()+"/sim/faults", body)
		require.NoError(t, err)
		return code, string(b)
	}
	code, body := put(`{"sendDataFail":true}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = put(`{"clockSkew":"-5m","rejectNext":2,"rejectMessage":"no"}`)
	require.Equal(t, http.StatusOK, code, body)
	want := sim.Faults{SendDataFail: true, ClockSkew: -5 * time.Minute, RejectNext: 2, RejectMessage: "no"}
	require.Equal(t, want, s.Faults())
	require.JSONEq(t, `{"down":false,"errorRate":0,"dropRate":0,"sendDataFail":true,"clockSkew":"-5m0s",
		"rejectNext":2,"rejectMessage":"no"}`, body, "the answer is every fault in force")

	code, body = put(`{"errorRate":7,"latency":"1s"}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Equal(t, want, s.Faults(), "a refused PUT changes nothing")

	code, body = put(`{"sendDataFail":false,"clockSkew":""}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, sim.Faults{RejectNext: 2, RejectMessage: "no"}, s.Faults(), "false and \"\" clear what they name")

	code, _, b, err := do(t, "DELETE", s.URL()+"/sim/faults", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(b))
	require.Equal(t, sim.Faults{}, s.Faults())
	code, _, b, err = do(t, "GET", s.URL()+"/sim/faults", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"down":false,"errorRate":0,"dropRate":0}`, string(b))
}

// An outage through PUT keeps the faults it does not name: a rejection
// asked for before it is still pending once the service is back.
func TestPutDownKeepsTheOtherFaults(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	require.NoError(t, s.SetFaults(sim.Faults{RejectNext: 1, RejectMessage: "merchantTin: not registered"}))
	code, _, b, err := do(t, "PUT", s.URL()+"/sim/faults", `{"down":true,"downFor":"100ms"}`)
	require.NoError(t, err, "the answer comes before the listener closes")
	require.Equal(t, http.StatusOK, code, string(b))
	require.Contains(t, string(b), `"rejectNext":1`)
	require.True(t, s.Faults().Down, "in force once answered")
	require.Eventually(t, func() bool { return !s.Faults().Down }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, sim.Faults{RejectNext: 1, RejectMessage: "merchantTin: not registered"}, s.Faults())
	code, body := create(t, s, "B2C_RECEIPT", "R00001")
	require.Equal(t, http.StatusBadRequest, code, string(body))
	require.Contains(t, string(body), "merchantTin: not registered")
}

// UpdateFaults changes what its function sets, as one step; an error, or
// faults that do not validate, change nothing.
func TestUpdateFaults(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	require.NoError(t, s.SetFaults(sim.Faults{SendDataFail: true, OtherPace: 2}))
	got, err := s.UpdateFaults(func(f *sim.Faults) error { f.ClockSkew = time.Minute; return nil })
	require.NoError(t, err)
	want := sim.Faults{SendDataFail: true, OtherPace: 2, ClockSkew: time.Minute}
	require.Equal(t, want, got)
	require.Equal(t, want, s.Faults())

	boom := errors.New("boom")
	_, err = s.UpdateFaults(func(f *sim.Faults) error { f.Latency = time.Second; return boom })
	require.ErrorIs(t, err, boom)
	_, err = s.UpdateFaults(func(f *sim.Faults) error { f.ErrorRate = 2; return nil })
	require.ErrorIs(t, err, sim.ErrBadFaults)
	require.Equal(t, want, s.Faults(), "nothing changed")
}

// An outage's DownFor runs from when it began: changing another fault
// meanwhile does not start it again.
func TestUpdateFaultsKeepsAnOutagesEnd(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	require.NoError(t, s.SetFaults(sim.Faults{Down: true, DownFor: 300 * time.Millisecond}))
	deadline := time.Now().Add(5 * time.Second)
	for s.Faults().Down {
		require.True(t, time.Now().Before(deadline), "the outage did not end: each change started its 300ms again")
		_, err := s.UpdateFaults(func(f *sim.Faults) error { f.Latency += time.Millisecond; return nil })
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		code, _, _, err := do(t, "GET", s.URL()+"/sim/faults", "")
		return err == nil && code == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond, "listening again")
}
