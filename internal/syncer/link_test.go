package syncer_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// scripted is an upstream whose answer to each create is chosen by the
// test; it records when each create arrived.
type scripted struct {
	mu      sync.Mutex
	creates []time.Time
	answer  func(n int, w http.ResponseWriter) // n counts creates from 0
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	n := len(s.creates)
	s.creates = append(s.creates, time.Now())
	s.mu.Unlock()
	s.answer(n, w)
}

func (s *scripted) arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.creates...)
}

func success(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"status":"SUCCESS","id":"123456789012345678901234567890123","date":"2026-11-22 10:00:00","lottery":"SN 00000001","qrData":"1"}`)
}

// useScripted points r's worker at s instead of the simulator.
func (r *rig) useScripted(t *testing.T, cfg syncer.Config, s *scripted) {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{BaseURL: srv.URL, LookupBaseURL: srv.URL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	r.w = syncer.New(r.q, c, cfg, r.logger(), nil)
}

func TestTooManyRequestsPausesAllSending(t *testing.T) {
	t.Parallel()
	up := &scripted{answer: func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		success(w)
	}}
	cfg := fastConfig()
	cfg.Concurrency = 1
	r := newRig(t, cfg, sim.Options{})
	r.useScripted(t, cfg, up)
	r.enqueueN("tmr", 3)
	r.start()
	r.waitSettled(10 * time.Second)

	at := up.arrivals()
	require.Len(t, at, 4, "one 429, then the three receipts")
	require.GreaterOrEqual(t, at[1].Sub(at[0]), 900*time.Millisecond, "nothing is sent before Retry-After has passed")
}

// A 429 is an answer: the upstream is up and asks us to wait. It never
// counts toward down, it brings a down worker back up, and while its
// Retry-After is in force nothing is sent, probes included: a request may
// come sooner than that after a 429 only if it was already in flight, so
// fewer than Concurrency requests lie within the pause before any request.
func TestTooManyRequestsIsAnAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		downFirst bool // 503s until the worker is down, then 429s
	}{
		{"while up", false},
		{"while down", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tooMany atomic.Bool
			tooMany.Store(!tc.downFirst)
			first := atomic.Int64{} // index of the first 429, plus one
			up := &scripted{answer: func(n int, w http.ResponseWriter) {
				if !tooMany.Load() {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				first.CompareAndSwap(0, int64(n)+1)
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
			}}
			cfg := fastConfig()
			cfg.Concurrency = 2
			r := newRig(t, cfg, sim.Options{})
			r.useScripted(t, cfg, up)
			r.enqueueN("tmq", 4)
			r.start()
			if tc.downFirst {
				require.Eventually(t, func() bool { return !r.w.Status().Up }, 10*time.Second, time.Millisecond)
				tooMany.Store(true)
			}

			const after = 6 // requests answered 429 to look at: three pauses at least
			require.Eventually(t, func() bool {
				return first.Load() > 0 && len(up.arrivals()) >= int(first.Load())-1+after
			}, 15*time.Second, time.Millisecond)
			at := up.arrivals()[first.Load()-1:]
			for i := range at {
				near := 0
				for j := range i {
					if at[i].Sub(at[j]) < 900*time.Millisecond {
						near++
					}
				}
				require.Less(t, near, cfg.Concurrency, "request %d of the 429s was sent while Retry-After was in force", i)
			}
			require.True(t, r.w.Status().Up, "the upstream answers: it is up")
		})
	}
}

// A 429 without Retry-After is an answer too: however many come in a row,
// the upstream stays up (the worker pauses for a backoff step instead).
func TestTooManyRequestsWithoutRetryAfterKeepsUp(t *testing.T) {
	t.Parallel()
	up := &scripted{answer: func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusTooManyRequests) }}
	cfg := fastConfig()
	cfg.Concurrency = 2
	r := newRig(t, cfg, sim.Options{})
	r.useScripted(t, cfg, up)
	r.enqueueN("tmn", 4)
	r.start()
	// Well past DownAfter (3) answers.
	require.Eventually(t, func() bool { return len(up.arrivals()) >= 12 }, 15*time.Second, time.Millisecond)
	st := r.w.Status()
	require.True(t, st.Up, "429s in a row marked the upstream down")
	require.Contains(t, st.LastError, "429")
}

func TestDownAfterConsecutiveFailures(t *testing.T) {
	t.Parallel()
	up := &scripted{answer: func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }}
	cfg := fastConfig()
	cfg.Concurrency = 1
	cfg.MinBackoff, cfg.MaxBackoff = time.Second, 2*time.Second // probes come late
	r := newRig(t, cfg, sim.Options{})
	r.useScripted(t, cfg, up)
	r.enqueueN("dn", 5)
	r.start()

	require.Eventually(t, func() bool { return !r.w.Status().Up }, 10*time.Second, time.Millisecond)
	require.Len(t, up.arrivals(), 3, "three 5xx in a row mark the upstream down; not one more before the probe")
}

func TestEmptyQueueProbeNoticesRecovery(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	// Probes (here: the receipt itself) far apart, so that the cancel below
	// does not meet the receipt in the millisecond it is being probed.
	cfg.MinBackoff, cfg.MaxBackoff = 500*time.Millisecond, time.Second
	r := newRig(t, cfg, sim.Options{Seed: 18})
	require.NoError(t, r.sim.SetFaults(sim.Faults{Down: true}))
	e := r.enqueue(testkit.Receipt("gone"))
	r.start()
	require.Eventually(t, func() bool {
		got, err := r.q.Get(e.QueueID)
		return err == nil && !r.w.Status().Up && got.State == queue.StateQueued && len(got.Attempts) > 0
	}, 5*time.Second, time.Millisecond, "down, and the receipt back in the queue after a failed attempt")
	// The only receipt is cancelled: the queue is empty while down.
	_, action, err := r.q.RequestDelete(context.Background(), e.QueueID, "", time.Now())
	require.NoError(t, err)
	require.Equal(t, queue.DeleteCancelled, action)

	require.NoError(t, r.sim.SetFaults(sim.Faults{}))
	require.Eventually(t, func() bool { return r.w.Status().Up }, 5*time.Second, time.Millisecond)
	st := r.w.Status()
	// "connection refused" on Linux, "Connection refused." under Wine,
	// "...actively refused it." on Windows.
	require.Contains(t, strings.ToLower(st.LastError), "refused", "the outage's error is kept after recovery")
	require.False(t, st.LastErrorAt.IsZero(), "and dated")
	require.False(t, st.LastErrorAt.After(st.Since), "before the recovery, so the status page can say it is past")
	require.Positive(t, r.sim.Requests(sim.RouteInfo), "the probe was GET /rest/info")
	require.Zero(t, r.sim.Requests(sim.RouteCreateReceipt))
}
