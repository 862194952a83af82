package posapi

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
)

// read is one /rest/info read in a pace test: minutes after the start,
// leftLotteries, lastSentDate, posId and this till's B2C receipts since
// the read before.
type read struct {
	min   float64
	left  int64
	sent  string
	posID string
	own   int64
}

// widePaceCase is one sequence of reads and what the pace makes of it.
type widePaceCase struct {
	name    string
	reads   []read
	nowMin  float64
	perHour float64 // -1: unknown
	share   float64 // -1: unknown
	shared  bool
	cuts    []bool // per read after the first: the interval was cut out
}

// widePaceCases: refills in the middle, a quiet PosAPI, a restart, clock
// steps, and what the window forgets.
var widePaceCases = []widePaceCase{
	{"one read: unknown", []read{{0, 1000, "a", "1", 0}}, 1, -1, -1, false, nil},
	{"steady fall, all others'", []read{{0, 1000, "a", "1", 0}, {1, 900, "a", "1", 0}, {2, 800, "a", "1", 0}},
		2, 6000, 0, true, []bool{false, false}},
	{"this till's own only: not shared", []read{{0, 1000, "a", "1", 0}, {1, 990, "a", "1", 10}, {2, 980, "a", "1", 10}},
		2, 600, 1, false, []bool{false, false}},
	{"a count moved between intervals is not another till", []read{{0, 1000, "a", "1", 0}, {1, 990, "a", "1", 8}, {2, 980, "a", "1", 12}},
		2, 600, 1, false, []bool{false, false}},
	{"a refill in the middle is cut out", []read{{0, 1000, "a", "1", 0}, {1, 900, "a", "1", 0}, {2, 4950, "b", "1", 0}, {3, 4850, "b", "1", 0}},
		3, 6000, 0, true, []bool{false, true, false}},
	{"a send that left the reserve lower is cut out too", []read{{0, 1000, "a", "1", 0}, {1, 900, "a", "1", 0}, {2, 100, "b", "1", 0}},
		2, 6000, 0, true, []bool{false, true}},
	{"a quiet PosAPI: known, zero", []read{{0, 1000, "a", "1", 0}, {10, 1000, "a", "1", 0}, {20, 1000, "a", "1", 0}},
		20, 0, -1, false, []bool{false, false}},
	{"a restart (posId changed) is cut out", []read{{0, 1000, "a", "1", 0}, {1, 900, "a", "1", 0}, {2, 5000, "a", "2", 0}, {3, 4900, "a", "2", 0}},
		3, 6000, 0, true, []bool{false, true, false}},
	{"a reserve that rose with no send (restarted PosAPI) is cut out", []read{{0, 1000, "a", "", 0}, {1, 900, "a", "", 0}, {2, 5000, "a", "", 0}},
		2, 6000, 0, true, []bool{false, true}},
	{"the clock stepped back: no interval", []read{{0, 1000, "a", "1", 0}, {1, 900, "a", "1", 0}, {-60, 800, "a", "1", 0}},
		-59, -1, -1, true, []bool{false, true}},
	{"the clock stepped forward: too long to count", []read{{0, 1000, "a", "1", 0}, {1, 900, "a", "1", 0}, {600, 800, "a", "1", 0}},
		600, -1, -1, true, []bool{false, true}},
	{"a fall faster than any sales (a reserve set by hand) is cut out", []read{{0, 100000, "a", "1", 0}, {0.25, 150, "a", "1", 0}},
		1, -1, -1, false, []bool{true}},
	{"two reads moments apart (a start): unknown, not yet shared", []read{{0, 1000, "a", "1", 0}, {0.01, 998, "a", "1", 0}},
		0.01, -1, -1, false, []bool{false}},
	{"older than the window: forgotten", []read{{0, 1000, "a", "1", 0}, {1, 900, "a", "1", 0}},
		90, -1, -1, true, []bool{false}},
}

func TestWidePace(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	const maxGap = 30 * time.Minute
	for _, tc := range widePaceCases {
		t.Run(tc.name, func(t *testing.T) {
			var p wide
			at := func(m float64) time.Time { return start.Add(time.Duration(m * float64(time.Minute))) }
			for i, r := range tc.reads {
				ch := p.observe(lastRead{ok: true, left: r.left, sentRaw: r.sent, posID: r.posID, at: at(r.min)}, r.own, maxGap)
				if i > 0 {
					require.Equal(t, tc.cuts[i-1], ch.cut, "read %d", i)
				}
			}
			now := at(tc.nowMin)
			perHour, ok := p.perHour(now)
			if tc.perHour < 0 {
				require.False(t, ok, "pace %v", perHour)
			} else {
				require.True(t, ok)
				require.InDelta(t, tc.perHour, perHour, 0.001)
			}
			share, ok := p.ownShare(now)
			if tc.share < 0 {
				require.False(t, ok, "share %v", share)
			} else {
				require.True(t, ok)
				require.InDelta(t, tc.share, share, 0.001)
			}
			require.Equal(t, tc.shared, p.shared(now))
		})
	}
}

// watcherOn is a watcher of r's simulator with its own client, on r's
// clock, logging to log: another till on the same PosAPI.
func watcherOn(t *testing.T, r *rig, cfg Config, log *zap.Logger) *Watcher {
	t.Helper()
	var w *Watcher
	c, err := client.New(client.Config{BaseURL: r.sim.URL(), Timeout: 5 * time.Second,
		OnTiming: func(t client.Timing) { w.ObserveTiming(t) }})
	require.NoError(t, err)
	cfg.Now = r.clock.Now
	w = New(c, cfg, log, nil)
	return w
}

func TestSharedPosAPIPaceForecastAndStatus(t *testing.T) {
	t.Parallel()
	cfg := Config{AutoSendData: false, MinLotteries: 10, CheckEvery: 10 * time.Minute, RefillBefore: 2 * time.Hour}
	r := newRig(t, 100000, cfg)
	ctx := context.Background()
	r.w.round(ctx)
	require.Nil(t, r.w.Status().PacePerHour, "one read: the pace is unknown")
	require.Equal(t, 10*time.Second, r.w.readGap(), "while the pace is unknown the next read comes within 10 s, not check_every")

	require.NoError(t, r.sim.SetFaults(sim.Faults{OtherPace: 10})) // 36000 an hour
	r.clock.Add(time.Minute)
	r.sell(t, 30)
	r.w.round(ctx)
	st := r.w.Status()
	require.NotNil(t, st.PacePerHour)
	require.InDelta(t, 37800, *st.PacePerHour, 1, "600 by the others and 30 of this till's in a minute")
	require.InDelta(t, 30.0/630, *st.OwnShare, 0.001)
	require.True(t, st.Shared)
	require.Equal(t, "SIM-001", *st.PosNo)
	require.Equal(t, "SIM-001", st.Label)
	require.InDelta(t, 36000+30, st.PerHour, 1,
		"the forecast adds the other tills' pace to this till's own (30 in its first hour)")
	left := *st.LeftLotteries
	require.Equal(t, r.clock.Now().Add(time.Duration(float64(left)/36030*float64(time.Hour))).UTC().Truncate(time.Second),
		*st.LotteriesRunOutAt)
	require.Empty(t, st.Need, "2.6 hours left: beyond refill_before")
	require.Equal(t, 10*time.Minute, r.w.readGap(), "a run-out hours away: check_every")

	// The reserve runs down at PosAPI's pace; the reads come sooner as
	// the run-out nears, and the need shows before refill_before.
	var needAt time.Duration
	for range 100 {
		gap := r.w.readGap()
		require.GreaterOrEqual(t, gap, minReadGap, "never more often than every 10 s")
		r.clock.Add(gap)
		r.w.round(ctx)
		if need := r.w.Status().Need; need != "" && needAt == 0 {
			require.Contains(t, need, "posapi.refill_before")
			needAt = r.w.Status().LotteriesRunOutAt.Sub(r.clock.Now())
		}
		if r.w.readGap() == minReadGap {
			break
		}
	}
	require.Greater(t, needAt, 90*time.Minute, "the need showed soon after the run-out came within 2h")
	require.LessOrEqual(t, needAt, 2*time.Hour)
	require.Equal(t, minReadGap, r.w.readGap(), "close to the run-out the reads come every 10 s")
	require.Positive(t, *r.w.Status().LeftLotteries, "and that before the reserve is empty")
}

// readGap is the watcher's gap to the next read now (tests).
func (w *Watcher) readGap() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.readGapLocked(w.cfg.Now())
}

func TestQuietSharedPosAPIKeepsTheTillsOwnPace(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1000, Config{CheckEvery: 10 * time.Minute})
	ctx := context.Background()
	r.w.round(ctx)
	r.clock.Add(time.Minute)
	r.sell(t, 6)
	r.w.round(ctx)
	st := r.w.Status()
	require.InDelta(t, 360, *st.PacePerHour, 0.1, "6 in a minute, all this till's")
	require.InDelta(t, 1, *st.OwnShare, 0.001)
	require.False(t, st.Shared)
	for range 12 {
		r.clock.Add(10 * time.Minute)
		r.w.round(ctx)
	}
	st = r.w.Status()
	require.InDelta(t, 0, *st.PacePerHour, 0.001, "quiet for the last hour")
	require.Nil(t, st.OwnShare, "nothing fell: no share")
	require.InDelta(t, 6.0/(2+1.0/60), st.PerHour, 0.01, "the forecast falls back on this till's own pace")
	require.NotNil(t, st.LotteriesRunOutAt)
	require.Equal(t, 10*time.Minute, r.w.readGap(), "a quiet PosAPI is read every check_every")
}

func TestSpreadLetsOneTillSendForAll(t *testing.T) {
	t.Parallel()
	cfg := Config{AutoSendData: true, MinLotteries: 200, SendEvery: time.Hour, CheckEvery: 10 * time.Minute, SendSpread: 10 * time.Second}
	r := newRig(t, 1000, cfg)
	others := []*Watcher{watcherOn(t, r, cfg, nil), watcherOn(t, r, cfg, nil), watcherOn(t, r, cfg, nil)}
	all := append([]*Watcher{r.w}, others...)
	r.sim.SetLeftLotteries(100)
	ctx := context.Background()
	for _, w := range all {
		w.round(ctx) // each sees the need and waits its spread
	}
	require.Zero(t, r.sim.SendDataCalls(), "nobody calls before its spread")
	r.clock.Add(11 * time.Second)
	for _, w := range all {
		w.round(ctx)
	}
	require.Equal(t, 1, r.sim.SendDataCalls(), "the first re-read found the need and called; the others found it met")
	require.Equal(t, 1, r.sim.Requests(sim.RouteSendData))
	for _, w := range all {
		require.Empty(t, w.Status().Need)
	}

	// Low again a minute later: send_every counts from the lastSentDate
	// every till saw move, not only from its own call.
	r.sim.SetLeftLotteries(50)
	r.clock.Add(time.Minute)
	for _, w := range all {
		w.recheck = true
		w.round(ctx)
	}
	r.clock.Add(11 * time.Second)
	for _, w := range all {
		w.round(ctx)
	}
	require.Equal(t, 1, r.sim.SendDataCalls(), "within send_every of the last send, by any till")
	r.clock.Add(time.Hour)
	for _, w := range all {
		w.round(ctx)
	}
	r.clock.Add(11 * time.Second)
	for _, w := range all {
		w.round(ctx)
	}
	require.Equal(t, 2, r.sim.SendDataCalls())
}

// TestSpreadEndsBeforeTheNextRead: a till whose spread ends before its
// next read is due still holds the need its last read gave; the read it
// makes at the spread's end finds another till's sendData and makes none.
func TestSpreadEndsBeforeTheNextRead(t *testing.T) {
	t.Parallel()
	cfg := Config{AutoSendData: true, MinLotteries: 200, SendEvery: time.Hour, CheckEvery: 10 * time.Minute, SendSpread: time.Second}
	r := newRig(t, 1000, cfg)
	core, logs := observer.New(zap.InfoLevel)
	others := []*Watcher{watcherOn(t, r, cfg, zap.New(core)), watcherOn(t, r, cfg, zap.New(core))}
	all := append([]*Watcher{r.w}, others...)
	r.sim.SetLeftLotteries(100)
	ctx := context.Background()
	for _, w := range all {
		w.round(ctx)
	}
	r.clock.Add(2 * time.Second) // every spread over, no read due (every 10 s while the pace is unknown)
	for _, w := range all {
		w.round(ctx)
	}
	require.Equal(t, 1, r.sim.SendDataCalls(), "the first till called; the others' reads at their spread's end found it done")
	require.Equal(t, len(others), logs.FilterMessageSnippet("PosAPI's data was sent meanwhile").Len())
}

func TestALoneTillCallsAtOnceDespiteTheSpread(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1000, Config{AutoSendData: true, MinLotteries: 200, CheckEvery: 10 * time.Minute, SendSpread: 30 * time.Second})
	ctx := context.Background()
	r.w.round(ctx)
	r.clock.Add(time.Minute)
	r.sell(t, 5)
	r.w.round(ctx)
	require.False(t, r.w.Status().Shared)
	require.NotNil(t, r.w.Status().PacePerHour, "measured: this till is PosAPI's only client")
	// PosAPI's lastSentDate moves without this till (the POS's own
	// sendData passed through, or PosAPI restarted): a lone till's
	// send_every still counts from its own calls only.
	r.clock.Add(time.Second)
	_, err := r.w.up.Get(ctx, client.OpSendData, nil)
	require.NoError(t, err)
	r.w.recheck = true
	r.w.round(ctx)
	r.sim.SetLeftLotteries(100)
	r.w.recheck = true
	r.w.round(ctx)
	require.Equal(t, 2, r.sim.SendDataCalls(), "no other client to wait for: at once, as before the spread existed")
}

func TestNoSpreadCallsAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1000, Config{AutoSendData: true, MinLotteries: 200, CheckEvery: time.Minute})
	r.sim.SetLeftLotteries(100)
	r.w.round(context.Background())
	require.Equal(t, 1, r.sim.SendDataCalls(), "send_spread 0s: as before")
}

func TestClockStepKeepsThePaceAndTheSends(t *testing.T) {
	t.Parallel()
	cfg := Config{AutoSendData: true, MinLotteries: 200, CheckEvery: time.Minute, SendEvery: time.Hour}
	r := newRig(t, 1000, cfg)
	ctx := context.Background()
	require.NoError(t, r.sim.SetFaults(sim.Faults{OtherPace: 1}))
	r.w.round(ctx)
	r.clock.Add(time.Minute)
	r.w.round(ctx)
	require.InDelta(t, 3600, *r.w.Status().PacePerHour, 1)
	r.sim.SetLeftLotteries(100)
	r.w.recheck = true
	r.w.round(ctx)
	require.Equal(t, 1, r.sim.SendDataCalls())

	r.clock.Add(-3 * time.Hour) // the wall clock steps back
	r.w.round(ctx)
	st := r.w.Status()
	require.Nil(t, st.PacePerHour, "no interval across a step back, and none ends in the future")
	r.sim.SetLeftLotteries(100)
	r.w.recheck = true
	r.w.round(ctx)
	require.Equal(t, 2, r.sim.SendDataCalls(), "a send 'in the future' after a step back does not block send_every for hours")
}

func TestReadAgainWhenPosAPIAnswersAgain(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1000, Config{AutoSendData: true, MinLotteries: 200, CheckEvery: 10 * time.Minute})
	ctx := context.Background()
	require.NoError(t, r.sim.SetFaults(sim.Faults{Down: true}))
	r.w.round(ctx)
	require.NotEmpty(t, r.w.Status().InfoError)

	// PosAPI comes back with a low reserve. Nothing else is sent: the
	// failed read is retried after 10 s, not check_every.
	require.NoError(t, r.sim.SetFaults(sim.Faults{}))
	r.sim.SetLeftLotteries(50)
	r.clock.Add(9 * time.Second)
	r.w.round(ctx)
	require.Zero(t, r.sim.Requests(sim.RouteInfo), "not yet: 10 s between reads")
	r.clock.Add(time.Second)
	r.w.round(ctx)
	require.Empty(t, r.w.Status().InfoError)
	require.Equal(t, 1, r.sim.SendDataCalls(), "50 left: read again, and PosAPI asked to send at once")

	// Down again; any answer from PosAPI (a bank-accounts lookup through
	// the same client) has it read at once.
	require.NoError(t, r.sim.SetFaults(sim.Faults{Down: true}))
	r.clock.Add(time.Hour)
	r.w.round(ctx)
	require.NotEmpty(t, r.w.Status().InfoError)
	require.NoError(t, r.sim.SetFaults(sim.Faults{}))
	r.sim.SetLeftLotteries(40)
	c, err := client.New(client.Config{BaseURL: r.sim.URL(), Timeout: 5 * time.Second,
		OnTiming: func(t client.Timing) { r.w.ObserveTiming(t) }})
	require.NoError(t, err)
	_, err = c.Get(ctx, client.OpBankAccounts, nil)
	require.NoError(t, err)
	select {
	case <-r.w.wake:
	default:
		t.Fatal("an answer from PosAPI after a failed read did not wake the watcher")
	}
	r.w.round(ctx) // same instant: no 10 s wait
	require.Empty(t, r.w.Status().InfoError)
	require.Equal(t, 2, r.sim.SendDataCalls())
}
