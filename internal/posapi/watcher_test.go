package posapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// rig is a watcher of a simulated PosAPI, both on one fake clock.
type rig struct {
	sim   *sim.Sim
	clock *testkit.ManualClock
	w     *Watcher
	m     *metrics.Metrics
}

func newRig(t *testing.T, lotteries int, cfg Config) *rig {
	t.Helper()
	clk := testkit.NewManualClock(time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC))
	s := testkit.StartSim(t, sim.Options{Seed: 7, Lotteries: lotteries, Now: clk.Now})
	var w *Watcher
	c, err := client.New(client.Config{BaseURL: s.URL(), Timeout: 5 * time.Second,
		OnTiming: func(t client.Timing) { w.ObserveTiming(t) }})
	require.NoError(t, err)
	cfg.Now = clk.Now
	m := metrics.New()
	w = New(c, cfg, nil, m)
	return &rig{sim: s, clock: clk, w: w, m: m}
}

// run runs the watcher's loop until the test ends, and returns once its
// first round has read /rest/info.
func (r *rig) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return r.w.Status().LeftLotteries != nil }, 5*time.Second, 5*time.Millisecond)
}

func (r *rig) sell(t *testing.T, n int) {
	t.Helper()
	c, err := client.New(client.Config{BaseURL: r.sim.URL(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	for i := range n {
		_, err := c.CreateReceipt(context.Background(), []byte(testkit.Receipt(time.Now().Format("150405.000000")+string(rune('a'+i%26)))))
		require.NoError(t, err)
		r.w.ReceiptIssued(true)
	}
}

func TestStatusIsNullUntilKnown(t *testing.T) {
	t.Parallel()
	var w *Watcher
	b, err := json.Marshal(w.Status())
	require.NoError(t, err)
	require.JSONEq(t, `{"leftLotteries":null,"lastSentDate":null,"lastSentAgeSeconds":null,
		"lotteriesRunOutAt":null,"clockSkewSeconds":null,"lastSendData":null,
		"pacePerHour":null,"ownShare":null,"shared":false,"posNo":null}`, string(b))

	r := newRig(t, 1000, Config{AutoSendData: true})
	b, err = json.Marshal(r.w.Status())
	require.NoError(t, err)
	require.Contains(t, string(b), `"leftLotteries":null`)
}

func TestRoundReadsInfoAndForecasts(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1000, Config{AutoSendData: true, MinLotteries: 10, CheckEvery: time.Minute})
	r.clock.Add(2 * time.Hour)
	r.w.round(context.Background())
	st := r.w.Status()
	require.NotNil(t, st.LeftLotteries)
	require.EqualValues(t, 1000, *st.LeftLotteries)
	require.Equal(t, "2026-03-01 10:00:00", *st.LastSentDate, "as PosAPI wrote it, UB time")
	require.EqualValues(t, 2*3600, *st.LastSentAgeSeconds)
	require.Nil(t, st.LotteriesRunOutAt, "no sales yet: no forecast")
	require.NotNil(t, st.ClockSkewSeconds, "the Date header was compared")
	require.Nil(t, st.LastSendData)

	r.sell(t, 20)
	st = r.w.Status()
	require.EqualValues(t, 980, *st.LeftLotteries, "issued since the read count down")
	require.InDelta(t, 10, st.PerHour, 0.01, "20 in the first two hours")
	require.Equal(t, r.clock.Now().Add(98*time.Hour).UTC(), *st.LotteriesRunOutAt)
}

func TestSendDataWhenFewLeft(t *testing.T) {
	t.Parallel()
	r := newRig(t, 300, Config{AutoSendData: true, MinLotteries: 200, SendEvery: time.Hour, CheckEvery: time.Minute})
	r.sim.SetLeftLotteries(150)
	r.w.round(context.Background())
	require.Equal(t, 1, r.sim.SendDataCalls())
	st := r.w.Status()
	require.NotNil(t, st.LastSendData)
	require.True(t, st.LastSendData.OK, st.LastSendData.Message)
	require.Equal(t, r.clock.Now().UTC(), st.LastSendData.At)
	require.EqualValues(t, 300, *st.LeftLotteries, "read again after the sendData")
	require.Empty(t, st.Need)

	// Below again within send_every: not again until it has passed.
	r.sim.SetLeftLotteries(100)
	r.clock.Add(2 * time.Minute)
	r.w.round(context.Background())
	require.EqualValues(t, 100, *r.w.Status().LeftLotteries)
	require.Equal(t, 1, r.sim.SendDataCalls(), "at most once per send_every")
	r.clock.Add(time.Hour)
	r.w.round(context.Background())
	require.Equal(t, 2, r.sim.SendDataCalls())
}

func TestSendDataWhenLastSendIsOld(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1000, Config{AutoSendData: true, SendAfter: 12 * time.Hour, CheckEvery: time.Minute})
	r.clock.Add(11 * time.Hour)
	r.w.round(context.Background())
	require.Zero(t, r.sim.SendDataCalls())
	r.clock.Add(2 * time.Hour)
	r.w.round(context.Background())
	require.Equal(t, 1, r.sim.SendDataCalls())
	require.EqualValues(t, 0, *r.w.Status().LastSentAgeSeconds)
}

func TestAutoSendDataOffOnlyWarns(t *testing.T) {
	t.Parallel()
	r := newRig(t, 300, Config{AutoSendData: false, MinLotteries: 200, CheckEvery: time.Minute})
	r.sim.SetLeftLotteries(5)
	r.w.round(context.Background())
	r.clock.Add(3 * time.Hour)
	r.w.round(context.Background())
	require.Zero(t, r.sim.SendDataCalls())
	st := r.w.Status()
	require.Contains(t, st.Need, "only 5 lottery numbers are left")
	require.False(t, st.AutoSendData)
}

func TestFailingSendDataIsRecorded(t *testing.T) {
	t.Parallel()
	r := newRig(t, 300, Config{AutoSendData: true, MinLotteries: 200, CheckEvery: time.Minute})
	r.sim.SetLeftLotteries(10)
	require.NoError(t, r.sim.SetFaults(sim.Faults{SendDataFail: true}))
	r.w.round(context.Background())
	st := r.w.Status()
	require.NotNil(t, st.LastSendData)
	require.False(t, st.LastSendData.OK)
	require.Contains(t, st.LastSendData.Message, sim.SendDataFailMessage)
	require.EqualValues(t, 10, *st.LeftLotteries)
	stats := r.w.stats()
	require.EqualValues(t, 1, stats.SendDataFailed)
	require.EqualValues(t, 0, stats.SendDataOK)
}

func TestInfoNotAnsweringStopsSendData(t *testing.T) {
	t.Parallel()
	r := newRig(t, 300, Config{AutoSendData: true, MinLotteries: 200, CheckEvery: time.Minute})
	r.sim.SetLeftLotteries(10)
	require.NoError(t, r.sim.SetFaults(sim.Faults{ErrorRate: 1}))
	r.w.round(context.Background())
	require.Zero(t, r.sim.SendDataCalls())
	require.NotEmpty(t, r.w.Status().InfoError)
	require.Nil(t, r.w.Status().LeftLotteries)
}

// infoStub is a PosAPI whose /rest/info says leftLotteries = left, or
// fails when left < 0.
type infoStub struct{ left int }

func (s infoStub) Get(_ context.Context, op client.Op, _ url.Values, _ ...string) (*client.Raw, error) {
	if s.left < 0 || op != client.OpInfo {
		return nil, &client.Error{Op: op, Class: client.NotSent, Err: errors.New("refused")}
	}
	return &client.Raw{StatusCode: 200, Body: []byte(fmt.Sprintf(`{"leftLotteries":%d}`, s.left))}, nil
}

func TestReserveRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		left    int64 // -1: unknown
		fresh   int   // what /rest/info says when read again; -1: it fails
		issued  int
		min     int
		b2c     bool
		message string
		want    bool
	}{
		{"B2B is never the reserve", 0, 0, 0, 200, false, "сугалаа дууссан", false},
		{"known empty, any message", 0, 0, 0, 200, true, "something else", true},
		{"empty by the count since the read", 3, 3, 3, 200, true, "something else", true},
		{"names the lottery, few left", 50, 50, 0, 200, true, "Сугалааны нөөц дууссан", true},
		{"names the lottery in English, reserve unknown", -1, -1, 0, 200, true, "No lottery numbers left", true},
		{"names the lottery, thousands left, still: something else", 5000, 5000, 0, 200, true, "сугалаа", false},
		{"names the lottery, thousands left, read again: empty", 5000, 0, 0, 200, true, "сугалаа", true},
		{"names the lottery, thousands left, the read fails", 5000, -1, 0, 200, true, "сугалаа", true},
		{"another refusal, some left", 50, 50, 0, 200, true, "districtCode is wrong", false},
		{"another refusal, reserve unknown", -1, -1, 0, 200, true, "districtCode is wrong", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := New(infoStub{tc.fresh}, Config{MinLotteries: tc.min}, nil, nil)
			if tc.left >= 0 {
				w.info = infoState{known: true, left: tc.left}
			}
			for range tc.issued {
				w.ReceiptIssued(true)
			}
			require.Equal(t, tc.want, w.ReserveRefusal(context.Background(), tc.b2c, tc.message))
			if tc.want {
				require.EqualValues(t, 0, *w.Status().LeftLotteries)
				require.NotEmpty(t, w.Status().Need)
				select {
				case <-w.wake:
				default:
					t.Fatal("the watch loop was not woken")
				}
			}
		})
	}
}

func TestObserveInfo(t *testing.T) {
	t.Parallel()
	// An hour after the lastSentDate below, which is UB time (UTC+8).
	now := time.Date(2026, 1, 28, 8, 3, 27, 0, time.UTC)
	w := New(nil, Config{Now: func() time.Time { return now }}, nil, nil)
	require.ErrorIs(t, w.ObserveInfo([]byte(`{"lastSentDate":"2026-01-28 15:03:27"}`)), ErrNoReserve)
	require.Error(t, w.ObserveInfo([]byte(`{"leftLotteries":"many"}`)))
	require.ErrorIs(t, w.ObserveInfo([]byte(`{"leftLotteries":1.5}`)), ErrNoReserve)
	require.Error(t, w.ObserveInfo([]byte(`<html>`)))
	require.Nil(t, w.Status().LeftLotteries, "a bad answer changes nothing")
	require.NoError(t, w.ObserveInfo([]byte(`{"leftLotteries":19992,"lastSentDate":"2026-01-28 15:03:27"}`)))
	st := w.Status()
	require.EqualValues(t, 19992, *st.LeftLotteries)
	require.Equal(t, "2026-01-28 15:03:27", *st.LastSentDate)
	require.NotNil(t, st.LastSentAgeSeconds)
	require.EqualValues(t, 3600, *st.LastSentAgeSeconds, "on the watcher's clock, not the machine's")
	require.NoError(t, w.ObserveInfo([]byte(`{"leftLotteries":5,"lastSentDate":"not a date"}`)))
	st = w.Status()
	require.Equal(t, "not a date", *st.LastSentDate, "kept as written")
	require.Nil(t, st.LastSentAgeSeconds, "but no age can be told")
}

func TestRunWakesWhenASaleTakesTheReserveBelowTheMinimum(t *testing.T) {
	t.Parallel()
	r := newRig(t, 202, Config{AutoSendData: true, MinLotteries: 200, CheckEvery: time.Hour, SendEvery: time.Hour})
	r.run(t)
	r.sell(t, 2) // 200 left: not below the minimum
	require.Zero(t, r.sim.SendDataCalls())
	r.sell(t, 1)
	// The loop's next read is 10 s away (the pace is still unknown),
	// its tick a minute: only the sale's wake-up sends within 3 s.
	require.Eventually(t, func() bool { return r.sim.SendDataCalls() == 1 }, 3*time.Second, 5*time.Millisecond,
		"the sale that took the estimate to 199 (min_lotteries 200) asks for a sendData at once")
}

func TestRunWakesOnARefusal(t *testing.T) {
	t.Parallel()
	r := newRig(t, 300, Config{AutoSendData: true, CheckEvery: time.Hour, SendEvery: time.Hour})
	r.run(t)
	r.sim.SetLeftLotteries(0)
	require.True(t, r.w.ReserveRefusal(context.Background(), true, sim.ReserveEmptyMessage),
		"the watcher still counts 300, but PosAPI names the lottery: read again, and it is empty")
	require.Eventually(t, func() bool { return r.sim.SendDataCalls() == 1 }, 5*time.Second, 5*time.Millisecond,
		"a refusal for the reserve asks for a sendData at once")
	require.Eventually(t, func() bool {
		st := r.w.Status()
		return st.LeftLotteries != nil && *st.LeftLotteries == 300
	}, 5*time.Second, 5*time.Millisecond)
}
