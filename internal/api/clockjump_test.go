package api_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// wallClock is a till's wall clock that a test sets back and forward; the
// monotonic clock (real time) goes on as it does on a till whose clock is
// corrected.
type wallClock struct{ ns atomic.Int64 }

func newWallClock(t time.Time) *wallClock {
	c := &wallClock{}
	c.set(t)
	return c
}

func (c *wallClock) Now() time.Time        { return time.Unix(0, c.ns.Load()) }
func (c *wallClock) Wall() time.Time       { return c.Now() }
func (c *wallClock) Steady() time.Time     { return time.Now() }
func (c *wallClock) set(t time.Time)       { c.ns.Store(t.UnixNano()) }
func (c *wallClock) shift(d time.Duration) { c.ns.Add(int64(d)) }
func (c *wallClock) at(h, m int) time.Time { return time.Date(2026, 11, 23, h, m, 0, 0, ulaanbaatar) }
func (c *wallClock) setAt(h, m int)        { c.set(c.at(h, m)) }
func (c *wallClock) nextDay(h, m int)      { c.set(c.at(h, m).AddDate(0, 0, 1)) }

func attemptsOf(e *env, id string) int { return len(e.entry(id)["attempts"].([]any)) }

// bothClock is a worker clock whose wall and steady readings are both now.
type bothClock func() time.Time

func (c bothClock) Wall() time.Time   { return c() }
func (c bothClock) Steady() time.Time { return c() }

var ulaanbaatar = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Ulaanbaatar")
	if err != nil {
		panic(err)
	}
	return loc
}()

// clockEnv is the whole stack (simulator, client, store, queue, worker,
// API) with every wall clock on c, and retries a minute apart.
func clockEnv(t *testing.T, c *wallClock, o envOpts) *env {
	o.queue.Now, o.worker.Clock, o.api.Now, o.api.Location = c.Now, c, c.Now, ulaanbaatar
	if o.worker.MinBackoff == 0 {
		o.worker.MinBackoff, o.worker.MaxBackoff = time.Minute, time.Minute
	}
	return newEnv(t, o)
}

// TestClockPutBackDoesNotStrandABackoff: a receipt waiting a minute after
// a failed attempt is sent at once when the clock is then put back three
// hours, not three hours and a minute later.
func TestClockPutBackDoesNotStrandABackoff(t *testing.T) {
	t.Parallel()
	c := newWallClock(time.Date(2026, 11, 23, 14, 0, 0, 0, ulaanbaatar))
	e := clockEnv(t, c, envOpts{})
	require.NoError(t, e.sim.SetFaults(sim.Faults{ErrorRate: 1}))
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("cb1"), "Prefer", "wait=0")
	require.Equal(t, http.StatusAccepted, r.code)
	id := r.h.Get(api.HeaderQueueID)
	require.Eventually(t, func() bool { return attemptsOf(e, id) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	c.shift(-3 * time.Hour)
	e.waitState(id, queue.StateSent)
}

// TestClockPutForwardRetriesOnceNotInABurst: a clock put forward five
// hours ends a pending one-minute backoff (the retry comes up to that
// minute early); the next backoff is counted from the new time, so the
// failing receipt is tried once more, not again and again.
func TestClockPutForwardRetriesOnceNotInABurst(t *testing.T) {
	t.Parallel()
	c := newWallClock(time.Date(2026, 11, 23, 14, 0, 0, 0, ulaanbaatar))
	e := clockEnv(t, c, envOpts{worker: syncer.Config{DownAfter: 1000}})
	require.NoError(t, e.sim.SetFaults(sim.Faults{ErrorRate: 1}))
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("cf1"), "Prefer", "wait=0")
	require.Equal(t, http.StatusAccepted, r.code)
	id := r.h.Get(api.HeaderQueueID)
	require.Eventually(t, func() bool { return attemptsOf(e, id) == 1 }, 10*time.Second, 10*time.Millisecond)
	c.shift(5 * time.Hour)
	require.Eventually(t, func() bool { return attemptsOf(e, id) == 2 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(time.Second) // twenty poll intervals
	require.Equal(t, 2, attemptsOf(e, id), "a forward jump gave one early retry, not a burst")
	require.Equal(t, string(queue.StateQueued), e.entry(id)["state"])
}

// TestAgeingAcrossClockChanges: once receiptd has seen an unsent entry,
// its age runs on the monotonic clock. A clock put forward 30 hours raises
// no alert for a receipt a moment old; a clock put back 40 hours does not
// silence the warning of one that is really past the threshold (here
// 400 ms of real time).
func TestAgeingAcrossClockChanges(t *testing.T) {
	t.Parallel()
	c := newWallClock(time.Date(2026, 11, 23, 14, 0, 0, 0, ulaanbaatar))
	e := clockEnv(t, c, envOpts{noWorker: true,
		api:    api.Options{UnsentWarn: 400 * time.Millisecond, UnsentCritical: time.Hour},
		worker: syncer.Config{UnsentWarn: 400 * time.Millisecond, UnsentCritical: time.Hour}})
	require.Equal(t, http.StatusAccepted, e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("age1"), "Prefer", "wait=0").code)
	status := func() map[string]any { return e.do(http.MethodGet, "/receiptd/status", "").json(e.t) }
	require.Equal(t, "none", status()["alert"])

	c.shift(30 * time.Hour)
	m := status()
	require.Equal(t, "none", m["alert"], "a clock put forward is no ageing")
	require.Less(t, m["oldestUnsentAge"].(float64), float64(60))

	time.Sleep(500 * time.Millisecond)
	require.Equal(t, "warn", status()["alert"], "real time passed")
	c.shift(-40 * time.Hour) // now before the receipt's acceptance time
	require.Equal(t, "warn", status()["alert"], "a clock put back does not silence the alert")
}

// TestDayKeyAcrossMidnightBothWays: without an Idempotency-Key, a retry
// whose clock crossed midnight, forward or back, replays the sale it
// repeats instead of issuing it again; a clock put back hours within a
// day keeps the day's key.
func TestDayKeyAcrossMidnightBothWays(t *testing.T) {
	t.Parallel()
	c := newWallClock(time.Time{})
	e := clockEnv(t, c, envOpts{noWorker: true})
	post := func(suffix string) (string, bool) {
		r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt(suffix), "Prefer", "wait=0")
		require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
		return r.h.Get(api.HeaderQueueID), r.h.Get(api.HeaderReplayed) == "true"
	}
	for _, tc := range []struct {
		name          string
		first, second func()
	}{
		{"forward over midnight", func() { c.setAt(23, 50) }, func() { c.nextDay(0, 10) }},
		{"back over midnight", func() { c.nextDay(0, 5) }, func() { c.setAt(23, 55) }},
		{"back three hours", func() { c.setAt(14, 0) }, func() { c.setAt(11, 0) }},
		{"forward five hours", func() { c.setAt(9, 0) }, func() { c.setAt(14, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suffix := "day-" + tc.name
			tc.first()
			id, replayed := post(suffix)
			require.False(t, replayed)
			tc.second()
			again, replayed := post(suffix)
			require.True(t, replayed, "the retry became a new sale %s", again)
			require.Equal(t, id, again)
		})
	}
}
