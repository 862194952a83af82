package fleet

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/fleet/fleettest"
)

// testRegistry holds a counter, a gauge with a label, a histogram and a
// series that is not receiptd's own.
func testRegistry(t *testing.T) (*prometheus.Registry, prometheus.Counter) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "receiptd_things_total", Help: "h"})
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "receiptd_queue_entries", Help: "h"}, []string{"state"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "receiptd_wait_seconds", Help: "h", Buckets: []float64{0.005, 1, 2.5}})
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_other", Help: "h"})
	reg.MustRegister(c, g, h, other)
	g.WithLabelValues("queued").Set(3)
	h.Observe(0.5)
	c.Add(7)
	return reg, c
}

type pushEnv struct {
	p    *Pusher
	logs *observer.ObservedLogs
	stop func()
}

func startPusher(t *testing.T, url, dir string, mod func(*Config)) *pushEnv {
	t.Helper()
	reg, _ := testRegistry(t)
	client, err := NewClient(ClientOptions{Timeout: 5 * time.Second})
	require.NoError(t, err)
	cfg := Config{URL: url, Interval: 100 * time.Millisecond, Client: client, Dir: dir,
		Labels: map[string]string{"shop": "017", "till": "2"}, Instance: "till-host",
		Headers: map[string]string{"Authorization": "Bearer head-office"},
		Buffer:  time.Hour, BufferBytes: 64 << 20}
	if mod != nil {
		mod(&cfg)
	}
	core, logs := observer.New(zap.InfoLevel)
	p, err := New(cfg, reg, zap.New(core))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.Run(ctx) }()
	e := &pushEnv{p: p, logs: logs}
	var once sync.Once
	e.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(e.stop)
	return e
}

func TestPushSendsReceiptdSeries(t *testing.T) {
	t.Parallel()
	r := fleettest.New(t, nil)
	startPusher(t, r.URL, t.TempDir(), nil)
	require.Eventually(t, func() bool { return len(r.Samples()) > 0 }, 5*time.Second, 10*time.Millisecond)

	h := r.Headers(0)
	require.Equal(t, "snappy", h.Get("Content-Encoding"))
	require.Equal(t, "application/x-protobuf", h.Get("Content-Type"))
	require.Equal(t, "0.1.0", h.Get("X-Prometheus-Remote-Write-Version"))
	require.Equal(t, "Bearer head-office", h.Get("Authorization"))

	first := map[string]fleettest.Sample{}
	for _, s := range r.Samples() {
		require.Equal(t, "017", s.Labels["shop"])
		require.Equal(t, "2", s.Labels["till"])
		require.Equal(t, "till-host", s.Labels["instance"])
		require.NotEqual(t, "go_other", s.Labels["__name__"], "only receiptd_ series are pushed")
		if _, ok := first[s.Series()]; !ok {
			first[s.Series()] = s
		}
	}
	want := map[string]float64{
		"__name__=receiptd_things_total,instance=till-host,shop=017,till=2,":                 7,
		"__name__=receiptd_queue_entries,instance=till-host,shop=017,state=queued,till=2,":   3,
		"__name__=receiptd_wait_seconds_bucket,instance=till-host,le=0.005,shop=017,till=2,": 0,
		"__name__=receiptd_wait_seconds_bucket,instance=till-host,le=1,shop=017,till=2,":     1,
		"__name__=receiptd_wait_seconds_bucket,instance=till-host,le=2.5,shop=017,till=2,":   1,
		"__name__=receiptd_wait_seconds_bucket,instance=till-host,le=+Inf,shop=017,till=2,":  1,
		"__name__=receiptd_wait_seconds_sum,instance=till-host,shop=017,till=2,":             0.5,
		"__name__=receiptd_wait_seconds_count,instance=till-host,shop=017,till=2,":           1,
	}
	require.Len(t, first, len(want))
	for k, v := range want {
		require.Contains(t, first, k)
		require.Equal(t, v, first[k].Value, k)
	}
}

// TestStoreAndForward: while the head office fails (5xx, then no
// listener at all), samples wait on disk; once it answers, every interval
// arrives, oldest first, with nothing missing.
func TestStoreAndForward(t *testing.T) {
	t.Parallel()
	var down sync.Mutex
	failing := true
	r := fleettest.New(t, func(int) int {
		down.Lock()
		defer down.Unlock()
		if failing {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	dir := t.TempDir()
	e := startPusher(t, r.URL, dir, nil)
	require.Eventually(t, func() bool { return e.p.Status().BufferedSamples >= 8*10 }, 10*time.Second, 20*time.Millisecond,
		"ten intervals buffered")
	require.Empty(t, r.Samples())
	st := e.p.Status()
	require.True(t, st.LastSuccess.IsZero())
	require.False(t, st.OldestBuffered.IsZero())
	oldest := st.OldestBuffered

	down.Lock()
	failing = false
	down.Unlock()
	require.Eventually(t, func() bool { return e.p.Status().BufferedSamples < 8*2 }, 15*time.Second, 20*time.Millisecond,
		"the backlog drains once the head office answers")
	e.stop()
	require.False(t, e.p.Status().LastSuccess.IsZero())
	require.Zero(t, e.p.Status().Dropped)

	byTS := map[int64]int{}
	last := int64(0)
	for _, s := range r.Samples() {
		if s.Labels["__name__"] != "receiptd_things_total" {
			continue
		}
		require.Greater(t, s.TS, last, "in time order")
		last = s.TS
		byTS[s.TS]++
	}
	require.GreaterOrEqual(t, len(byTS), 10)
	require.LessOrEqual(t, oldest.UnixMilli(), minKey(byTS), "the oldest buffered interval arrived")
	require.Equal(t, oldest.UnixMilli(), minKey(byTS))
	require.Len(t, e.logs.FilterMessageSnippet("does not accept").All(), 1, "one line per outage, not one per retry")
	require.Len(t, e.logs.FilterMessageSnippet("accepts the fleet samples again").All(), 1)
}

func minKey(m map[int64]int) int64 {
	first := true
	var out int64
	for k := range m {
		if first || k < out {
			out, first = k, false
		}
	}
	return out
}

// TestRefusedBatchDropped: a 4xx other than 429 drops the request's
// samples (counted), is logged once, and the push goes on.
func TestRefusedBatchDropped(t *testing.T) {
	t.Parallel()
	r := fleettest.New(t, func(n int) int {
		if n < 3 {
			return http.StatusBadRequest
		}
		return http.StatusNoContent
	})
	e := startPusher(t, r.URL, t.TempDir(), nil)
	require.Eventually(t, func() bool { return len(r.Samples()) > 0 }, 5*time.Second, 10*time.Millisecond)
	e.stop()
	st := e.p.Status()
	require.GreaterOrEqual(t, st.Dropped, uint64(3*8), "three refused requests of at least one interval each")
	require.Len(t, e.logs.FilterMessageSnippet("refused fleet samples").All(), 1)
}

// TestUnsentSurvivesRestart: what the head office never accepted is sent
// by the next run, and what it accepted is not sent again.
//
// A push whose answer is lost (a stop or crash while it is in flight) is
// sent again by the next run, as the contract says, though the head office
// had it. So the first head office accepts two pushes and refuses
// the rest, and that run stops only once a third push was answered: by then
// the pusher has seen both acceptances, and every push in flight at the
// stop is one that was refused.
//
// Intervals are told apart by their timestamps, so the three runs share a
// clock that never reads the same millisecond twice (Windows' clock may
// move in steps of up to 15.6 ms, and a run started right after another's
// last interval could otherwise stamp its first with the same time).
func TestUnsentSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var mu sync.Mutex
	var last time.Time
	clock := func(c *Config) {
		c.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			if next := last.Add(time.Millisecond); now.Before(next) {
				now = next
			}
			last = now
			return now
		}
	}
	accepting := fleettest.New(t, func(n int) int {
		if n < 2 {
			return http.StatusNoContent
		}
		return http.StatusServiceUnavailable
	})
	e := startPusher(t, accepting.URL, dir, clock)
	require.Eventually(t, func() bool { return accepting.Requests() >= 3 }, 5*time.Second, 10*time.Millisecond)
	e.stop()
	sent := map[int64]bool{}
	for _, s := range accepting.Samples() {
		sent[s.TS] = true
	}
	require.NotEmpty(t, sent)

	dead := fleettest.New(t, func(int) int { return http.StatusBadGateway })
	e = startPusher(t, dead.URL, dir, clock)
	require.Eventually(t, func() bool { return e.p.Status().BufferedSamples >= 24 }, 5*time.Second, 10*time.Millisecond)
	e.stop()
	buffered := e.p.Status().BufferedSamples

	again := fleettest.New(t, nil)
	e = startPusher(t, again.URL, dir, func(c *Config) { clock(c); c.Interval = time.Hour })
	require.Eventually(t, func() bool { return e.p.Status().BufferedSamples == 0 }, 5*time.Second, 10*time.Millisecond)
	e.stop()
	got := again.Samples()
	require.GreaterOrEqual(t, uint64(len(got)), buffered, "every buffered sample, plus the new run's first interval")
	for _, s := range got {
		require.False(t, sent[s.TS], "an accepted interval is never sent again")
	}
}

// TestPushInFlightAtStopIsSentAgain: a push whose answer never came (the
// run stopped while the head office held it) is sent again by the next
// run, as the contract says.
func TestPushInFlightAtStopIsSentAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	arrived := make(chan []fleettest.Sample, 1)
	holding := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got, err := fleettest.DecodePush(body)
		if err != nil {
			t.Errorf("push body: %v", err)
		}
		select {
		case arrived <- got:
		default:
		}
		<-r.Context().Done() // never answered: the run stops first
	}))
	t.Cleanup(holding.Close)
	e := startPusher(t, holding.URL, dir, nil)
	var held []fleettest.Sample
	select {
	case held = <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("no push arrived")
	}
	e.stop()
	require.NotEmpty(t, held)

	again := fleettest.New(t, nil)
	e = startPusher(t, again.URL, dir, func(c *Config) { c.Interval = time.Hour })
	require.Eventually(t, func() bool { return e.p.Status().BufferedSamples == 0 }, 5*time.Second, 10*time.Millisecond)
	e.stop()
	sent := map[string]bool{}
	for _, s := range again.Samples() {
		sent[s.Series()+"@"+strconv.FormatInt(s.TS, 10)] = true
	}
	for _, s := range held {
		require.True(t, sent[s.Series()+"@"+strconv.FormatInt(s.TS, 10)], "%s at %d, in flight at the stop, was not sent again", s.Series(), s.TS)
	}
}

// Issue 32, point 2: the push says when it starts, when it first works, and
// every change between failing and working, in that order.
func TestPushLogsStartFirstSuccessAndEveryChange(t *testing.T) {
	t.Parallel()
	r := fleettest.New(t, func(n int) int {
		if n >= 1 && n <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	e := startPusher(t, r.URL, t.TempDir(), nil)
	require.Eventually(t, func() bool { return r.Requests() >= 6 }, 15*time.Second, 20*time.Millisecond)
	e.stop()
	var got []string
	for _, l := range e.logs.All() {
		got = append(got, l.Message)
	}
	want := []string{"pushing this till's", "first fleet samples", "does not accept", "accepts the fleet samples again"}
	require.GreaterOrEqual(t, len(got), len(want), got)
	for i, w := range want {
		require.Contains(t, got[i], w, "line %d of %q", i, got)
	}
	require.Len(t, e.logs.FilterMessageSnippet("first fleet samples").All(), 1, "the first success once only")
}

// Issue 40, item 3: Status says why the pushes fail and since when (the
// first failure after the last success, kept through the retries), so
// the status page never says the head office receives figures it does
// not; an accepted push clears both, and a refusal (4xx) is a failure too.
func TestStatusSaysWhyPushesFail(t *testing.T) {
	var code atomic.Int32
	code.Store(http.StatusServiceUnavailable)
	r := fleettest.New(t, func(int) int { return int(code.Load()) })
	e := startPusher(t, r.URL, t.TempDir(), nil)
	require.Eventually(t, func() bool { return e.p.Status().LastError != "" }, 5*time.Second, 10*time.Millisecond)
	st := e.p.Status()
	require.Contains(t, st.LastError, "HTTP 503")
	require.False(t, st.FailingSince.IsZero())
	require.True(t, st.LastSuccess.IsZero())
	since, requests := st.FailingSince, r.Requests()
	require.Eventually(t, func() bool { return r.Requests() > requests }, 5*time.Second, 10*time.Millisecond, "a retry")
	require.Equal(t, since, e.p.Status().FailingSince, "failing since the first failure, not the last retry")

	code.Store(http.StatusNoContent)
	require.Eventually(t, func() bool { return !e.p.Status().LastSuccess.IsZero() }, 10*time.Second, 10*time.Millisecond)
	st = e.p.Status()
	require.Empty(t, st.LastError)
	require.True(t, st.FailingSince.IsZero())

	code.Store(http.StatusUnauthorized)
	require.Eventually(t, func() bool { return e.p.Status().LastError != "" }, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, e.p.Status().LastError, "refused the samples: HTTP 401")
}
