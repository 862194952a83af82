package metrics

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// scrape fetches /metrics from a real HTTP server and parses the text.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"),
		resp.Header.Get("Content-Type"))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// series finds the metric of family name whose labels are exactly labels
// (given as name, value pairs); nil if there is none.
func series(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	fam := fams[name]
	if fam == nil {
		return nil
	}
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := series(fams, name, labels...)
	require.NotNil(t, m, "series %s%v missing", name, labels)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	t.Fatalf("series %s is not a counter or gauge", name)
	return 0
}

// bucket returns the cumulative count of histogram h at upper bound le.
func bucket(t *testing.T, h *dto.Histogram, le float64) uint64 {
	t.Helper()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	t.Fatalf("no bucket le=%v", le)
	return 0
}

func TestSyncAndStoreSeries(t *testing.T) {
	t.Parallel()
	m := New()
	m.SendAttempt("receipt", "success", 30*time.Millisecond)
	m.SendAttempt("receipt", "success", 3*time.Second)
	m.SendAttempt("receipt", "transient", 12*time.Second)
	m.SendAttempt("delete", "rejected", 200*time.Millisecond)
	m.Ambiguous()
	m.Ambiguous()
	m.SetUpstreamUp(true)
	m.SetAlertLevel("warn")
	m.Commit(3*time.Millisecond, 4)
	m.Commit(700*time.Microsecond, 1)

	fams := scrape(t, m.Handler())
	require.Equal(t, 2.0, value(t, fams, "receiptd_send_attempts_total", "kind", "receipt", "outcome", "success"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_send_attempts_total", "kind", "receipt", "outcome", "transient"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_send_attempts_total", "kind", "delete", "outcome", "rejected"))
	require.Equal(t, 2.0, value(t, fams, "receiptd_ambiguous_attempts_total"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_upstream_up"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_unsent_alert_level"))

	send := series(fams, "receiptd_send_duration_seconds", "kind", "receipt").GetHistogram()
	require.EqualValues(t, 3, send.GetSampleCount())
	require.InDelta(t, 15.03, send.GetSampleSum(), 1e-9)
	require.EqualValues(t, 1, bucket(t, send, 0.05))
	require.EqualValues(t, 2, bucket(t, send, 5))
	require.EqualValues(t, 3, bucket(t, send, 20))

	commit := series(fams, "receiptd_commit_duration_seconds").GetHistogram()
	require.EqualValues(t, 2, commit.GetSampleCount())
	require.InDelta(t, 0.0037, commit.GetSampleSum(), 1e-9)
	require.EqualValues(t, 0, bucket(t, commit, 0.0005))
	require.EqualValues(t, 1, bucket(t, commit, 0.001))
	require.EqualValues(t, 1, bucket(t, commit, 0.002))
	require.EqualValues(t, 2, bucket(t, commit, 0.004))

	batch := series(fams, "receiptd_commit_batch_size").GetHistogram()
	require.EqualValues(t, 1, bucket(t, batch, 1))
	require.EqualValues(t, 2, bucket(t, batch, 4))
	require.InDelta(t, 5, batch.GetSampleSum(), 1e-9)

	m.SetUpstreamUp(false)
	fams = scrape(t, m.Handler())
	require.Equal(t, 0.0, value(t, fams, "receiptd_upstream_up"))
}

func TestAlertLevel(t *testing.T) {
	t.Parallel()
	m := New()
	for _, tc := range []struct {
		level string
		want  float64
	}{
		{"critical", 2}, {"none", 0}, {"WARN", 1}, {"bogus", 1}, {"warning", 1}, {"", 0},
	} {
		t.Run(tc.level, func(t *testing.T) {
			m.SetAlertLevel(tc.level)
			require.Equal(t, tc.want, value(t, scrape(t, m.Handler()), "receiptd_unsent_alert_level"))
		})
	}
}

func TestCacheAndHTTPSeries(t *testing.T) {
	t.Parallel()
	m := New()
	m.CacheLookup("branchInfo", "hit")
	m.CacheLookup("branchInfo", "hit")
	m.CacheLookup("branchInfo", "stale")
	m.CacheLookup("tinInfo", "miss")
	m.HTTPRequest("/rest/receipt", 202, 4*time.Millisecond)
	m.HTTPRequest("/rest/receipt", 200, 1200*time.Millisecond)
	m.HTTPRequest("/rest/receipt", 200, 300*time.Millisecond)

	fams := scrape(t, m.Handler())
	require.Equal(t, 2.0, value(t, fams, "receiptd_cache_requests_total", "kind", "branchInfo", "result", "hit"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_cache_requests_total", "kind", "branchInfo", "result", "stale"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_cache_requests_total", "kind", "tinInfo", "result", "miss"))
	require.Equal(t, 2.0, value(t, fams, "receiptd_http_requests_total", "code", "200", "route", "/rest/receipt"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_http_requests_total", "code", "202", "route", "/rest/receipt"))
	h := series(fams, "receiptd_http_request_duration_seconds", "route", "/rest/receipt").GetHistogram()
	require.EqualValues(t, 3, h.GetSampleCount())
	require.EqualValues(t, 1, bucket(t, h, 0.005))
	require.EqualValues(t, 2, bucket(t, h, 0.5))
}

func TestRouteCardinalityIsBounded(t *testing.T) {
	t.Parallel()
	m := New()
	for i := 0; i < maxRoutes+10; i++ {
		m.HTTPRequest(fmt.Sprintf("/probe/%d", i), 404, time.Millisecond)
	}
	m.HTTPRequest("/probe/0", 404, time.Millisecond)
	fams := scrape(t, m.Handler())
	require.Len(t, fams["receiptd_http_requests_total"].GetMetric(), maxRoutes+1)
	require.Equal(t, 10.0, value(t, fams, "receiptd_http_requests_total", "code", "404", "route", "other"))
	require.Equal(t, 2.0, value(t, fams, "receiptd_http_requests_total", "code", "404", "route", "/probe/0"))
}

func TestQueueReadAtScrapeTime(t *testing.T) {
	t.Parallel()
	m := New()
	fams := scrape(t, m.Handler())
	require.Nil(t, fams["receiptd_queue_entries"], "nothing before WatchQueue")

	var (
		mu     sync.Mutex
		counts = map[string]int{"queued": 3, "held": 1, "future_state": 2}
		oldest = 90 * time.Second
		fail   error
	)
	m.WatchQueue(func() (map[string]int, time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		return counts, oldest, fail
	})
	fams = scrape(t, m.Handler())
	require.Equal(t, 3.0, value(t, fams, "receiptd_queue_entries", "state", "queued"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_queue_entries", "state", "held"))
	require.Equal(t, 0.0, value(t, fams, "receiptd_queue_entries", "state", "sent"))
	require.Equal(t, 2.0, value(t, fams, "receiptd_queue_entries", "state", "future_state"))
	require.Len(t, fams["receiptd_queue_entries"].GetMetric(), len(States)+1)
	require.Equal(t, 90.0, value(t, fams, "receiptd_oldest_unsent_age_seconds"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_queue_stats_ok"))

	mu.Lock()
	counts["queued"], oldest = 0, 0
	mu.Unlock()
	fams = scrape(t, m.Handler())
	require.Equal(t, 0.0, value(t, fams, "receiptd_queue_entries", "state", "queued"))
	require.Equal(t, 0.0, value(t, fams, "receiptd_oldest_unsent_age_seconds"))

	mu.Lock()
	fail = errors.New("database closed")
	mu.Unlock()
	fams = scrape(t, m.Handler())
	require.Equal(t, 0.0, value(t, fams, "receiptd_queue_stats_ok"))
	require.Nil(t, fams["receiptd_queue_entries"])
	require.NotNil(t, fams["go_goroutines"], "the rest of the scrape is served")

	m.WatchQueue(nil)
	fams = scrape(t, m.Handler())
	require.Nil(t, fams["receiptd_queue_stats_ok"])
}

func TestRuntimeCollectorsAndRegister(t *testing.T) {
	t.Parallel()
	m := New()
	extra := prometheus.NewGauge(prometheus.GaugeOpts{Name: "receiptd_db_size_bytes", Help: "test"})
	extra.Set(4096)
	require.NoError(t, m.Register(extra))
	require.Error(t, m.Register(extra), "a duplicate is refused")

	fams := scrape(t, m.Handler())
	require.NotNil(t, fams["go_goroutines"])
	require.Equal(t, 4096.0, value(t, fams, "receiptd_db_size_bytes"))
	if runtime.GOOS == "linux" {
		require.NotNil(t, fams["process_resident_memory_bytes"])
	}
}

func TestNilMetricsIsANoOp(t *testing.T) {
	t.Parallel()
	var m *Metrics
	require.NotPanics(t, func() {
		m.SendAttempt("receipt", "success", time.Second)
		m.Ambiguous()
		m.SetUpstreamUp(true)
		m.SetAlertLevel("critical")
		m.Commit(time.Millisecond, 1)
		m.CacheLookup("branchInfo", "hit")
		m.HTTPRequest("/", 200, time.Millisecond)
		m.WatchQueue(func() (map[string]int, time.Duration, error) { return nil, 0, nil })
		require.NoError(t, m.Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: "x", Help: "x"})))
	})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, string(body), "metrics are disabled")
}

func TestConcurrentUseWhileScraping(t *testing.T) {
	t.Parallel()
	m := New()
	m.WatchQueue(func() (map[string]int, time.Duration, error) {
		return map[string]int{"queued": 1}, time.Second, nil
	})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				m.SendAttempt("receipt", "success", time.Millisecond)
				m.Commit(time.Millisecond, 2)
				m.HTTPRequest("/rest/receipt", 200, time.Millisecond)
				m.SetUpstreamUp(i%2 == 0)
			}
		}()
	}
	for i := 0; i < 5; i++ {
		scrape(t, m.Handler())
	}
	wg.Wait()
	fams := scrape(t, m.Handler())
	require.Equal(t, 800.0, value(t, fams, "receiptd_send_attempts_total", "kind", "receipt", "outcome", "success"))
	require.EqualValues(t, 800, series(fams, "receiptd_commit_batch_size").GetHistogram().GetSampleCount())
}

// FuzzLabelValues feeds label values as an HTTP client could choose them
// (a route) through the text format and back.
func FuzzLabelValues(f *testing.F) {
	for _, s := range []string{"/rest/receipt", "", "\xff\xfe", "a\"b\\c\nd", "ЖЯЮ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := New()
		m.HTTPRequest(s, 200, time.Millisecond)
		m.CacheLookup(s, s)
		m.SendAttempt(s, s, time.Millisecond)
		fams, err := m.reg.Gather()
		require.NoError(t, err)
		var b strings.Builder
		for _, fam := range fams {
			if strings.HasPrefix(fam.GetName(), "receiptd_") {
				_, err := expfmt.MetricFamilyToText(&b, fam)
				require.NoError(t, err)
			}
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		parsed, err := p.TextToMetricFamilies(strings.NewReader(b.String()))
		require.NoError(t, err)
		got := series(parsed, "receiptd_cache_requests_total", "kind", labelValue(s), "result", labelValue(s))
		require.NotNil(t, got)
		require.Equal(t, 1.0, got.GetCounter().GetValue())
	})
}
