package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "receiptd"

// maxRoutes bounds the route label's cardinality.
const maxRoutes = 64

// Bucket boundaries, in seconds or entries.
var (
	// Upstream calls: tens of milliseconds on a good day, tens of seconds
	// while PosAPI flushes its own backlog.
	sendBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}
	// Group commit with fsync: about 0.5 to 20 ms; doubling from 0.25 ms
	// to 256 ms resolves that range and shows a slow disk, plus 1 s.
	commitBuckets = append(prometheus.ExponentialBuckets(0.00025, 2, 11), 1)
	batchBuckets  = prometheus.ExponentialBuckets(1, 2, 10) // 1 .. 512
	// Local API: sub-millisecond lookups to POST /rest/receipt waiting up
	// to accept.wait (5 s by default) or longer on request.
	httpBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Metrics holds receiptd's collectors. The zero value is not usable; build
// one with New, or use a nil *Metrics for "no metrics".
type Metrics struct {
	reg *prometheus.Registry

	sendAttempts   *prometheus.CounterVec
	sendDuration   *prometheus.HistogramVec
	ambiguous      prometheus.Counter
	upstreamUp     prometheus.Gauge
	alertLevel     prometheus.Gauge
	commitDuration prometheus.Histogram
	commitBatch    prometheus.Histogram
	cacheRequests  *prometheus.CounterVec
	httpRequests   *prometheus.CounterVec
	httpDuration   *prometheus.HistogramVec
	authFailures   *prometheus.CounterVec
	capClosed      *prometheus.CounterVec
	accepted       [2]prometheus.Counter // [0] new, [1] replayed
	queue          *queueCollector
	store          *storeCollector
	log            *logCollector
	answers        *answersCollector
	answersDropped prometheus.Counter
	posapi         *posapiCollector // registered by WatchPosAPI
	posapiOnce     sync.Once
	control        *controlCollector // registered by WatchControl
	controlOnce    sync.Once
	controlErr     error
	backup         *backupCollector // registered by WatchBackup
	backupOnce     sync.Once
	fleet          *fleetCollector // registered by WatchFleet
	fleetOnce      sync.Once
	fleetErr       error
	update         *updateCollector // registered by WatchUpdate
	updateOnce     sync.Once
	buildMu        sync.Mutex
	buildVersion   string // SetBuildInfo's; "" before it

	routesMu sync.Mutex
	routes   map[string]struct{}
	// httpSeries holds, by route and status code, the two series one
	// request moves, so that a request does not hash its labels again.
	httpSeries sync.Map // httpKey → httpPair
}

// New builds a Metrics with its own registry, holding receiptd's series and
// the Go runtime and process collectors. It starts nothing.
func New() *Metrics {
	m := &Metrics{
		reg:    prometheus.NewRegistry(),
		routes: make(map[string]struct{}),
		sendAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "send_attempts_total",
			Help: "Upstream send attempts by entry kind (receipt, delete) and outcome.",
		}, []string{"kind", "outcome"}),
		sendDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "send_duration_seconds",
			Help:    "Duration of upstream send attempts.",
			Buckets: sendBuckets,
		}, []string{"kind"}),
		ambiguous: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "ambiguous_attempts_total",
			Help: "Send attempts whose request may have reached the upstream but whose answer was lost.",
		}),
		upstreamUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "upstream_up",
			Help: "1 when the tax service was reachable at the last attempt or probe, 0 otherwise.",
		}),
		alertLevel: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "unsent_alert_level",
			Help: "Ageing of the oldest unsent entry: 0 none, 1 warn, 2 critical.",
		}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "commit_duration_seconds",
			Help:    "Duration of database group commits, fsync included.",
			Buckets: commitBuckets,
		}),
		commitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "commit_batch_size",
			Help:    "Number of writes made durable by one group commit.",
			Buckets: batchBuckets,
		}),
		cacheRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "cache_requests_total",
			Help: "Lookup cache requests by lookup kind and result (hit, miss, stale).",
		}, []string{"kind", "result"}),
		queue:   newQueueCollector(),
		store:   newStoreCollector(),
		log:     newLogCollector(),
		answers: newAnswersCollector(),
		posapi:  newPosAPICollector(),
		backup:  newBackupCollector(),
		fleet:   newFleetCollector(),
		control: newControlCollector(),
		update:  newUpdateCollector(),
		answersDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "answers_dropped_total",
			Help: "Upstream answers no POS had received yet, pushed out of memory by accept.answer_count or accept.answer_mb.",
		}),
	}
	m.initHTTP()
	accepted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "receipts_accepted_total",
		Help: "Receipt creates made durable (replayed=false) or answered from an earlier acceptance of the same receipt (replayed=true).",
	}, []string{"replayed"})
	m.accepted = [2]prometheus.Counter{accepted.WithLabelValues("false"), accepted.WithLabelValues("true")}
	m.reg.MustRegister(accepted,
		m.sendAttempts, m.sendDuration, m.ambiguous, m.upstreamUp, m.alertLevel,
		m.commitDuration, m.commitBatch, m.cacheRequests, m.httpRequests,
		m.httpDuration, m.authFailures, m.capClosed, m.queue, m.store, m.log, m.answers, m.answersDropped,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Handler serves the registry in the Prometheus text format. A collector
// that fails is left out of the answer rather than failing the scrape. On a
// nil *Metrics it answers 404 "metrics are disabled".
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "metrics are disabled", http.StatusNotFound)
		})
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg,
	})
}

// Register adds another collector (say, database statistics) to the
// registry. It returns the registry's error for a duplicate or inconsistent
// collector; on a nil *Metrics it does nothing and returns nil.
func (m *Metrics) Register(c prometheus.Collector) error {
	if m == nil {
		return nil
	}
	return m.reg.Register(c)
}

// SendAttempt counts one upstream call of an entry of the given kind
// ("receipt", "delete") and its outcome (say "success", "rejected",
// "payment", "transient", "ambiguous") and records its duration.
func (m *Metrics) SendAttempt(kind, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	kind = labelValue(kind)
	m.sendAttempts.WithLabelValues(kind, labelValue(outcome)).Inc()
	m.sendDuration.WithLabelValues(kind).Observe(d.Seconds())
}

// Ambiguous counts one attempt whose answer was lost after the request may
// have reached the upstream.
func (m *Metrics) Ambiguous() {
	if m == nil {
		return
	}
	m.ambiguous.Inc()
}

// SetUpstreamUp records whether the upstream is reachable.
func (m *Metrics) SetUpstreamUp(up bool) {
	if m == nil {
		return
	}
	if up {
		m.upstreamUp.Set(1)
		return
	}
	m.upstreamUp.Set(0)
}

// SetAlertLevel records the ageing level of the oldest unsent entry:
// "none" (0), "warn" or "warning" (1), "critical" (2), in any case. Other
// values are ignored and leave the gauge as it was.
func (m *Metrics) SetAlertLevel(level string) {
	if m == nil {
		return
	}
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "none", "":
		m.alertLevel.Set(0)
	case "warn", "warning":
		m.alertLevel.Set(1)
	case "critical":
		m.alertLevel.Set(2)
	}
}

// Commit records one group commit: its duration (fsync included) and how
// many writes it made durable.
func (m *Metrics) Commit(d time.Duration, batchSize int) {
	if m == nil {
		return
	}
	m.commitDuration.Observe(d.Seconds())
	m.commitBatch.Observe(float64(batchSize))
}

// CacheLookup counts one lookup cache request of the given kind (say
// "branchInfo") and its result: "hit", "miss" or "stale".
func (m *Metrics) CacheLookup(kind, result string) {
	if m == nil {
		return
	}
	m.cacheRequests.WithLabelValues(labelValue(kind), labelValue(result)).Inc()
}

// HTTPRequest counts one local API request by its route pattern (not the
// raw path) and status code, and records its duration.
func (m *Metrics) HTTPRequest(route string, code int, d time.Duration) {
	if m == nil {
		return
	}
	k := httpKey{route, code}
	var pair httpPair
	if p, ok := m.httpSeries.Load(k); ok {
		pair = p.(httpPair)
	} else {
		bounded := m.boundedRoute(labelValue(route))
		pair = httpPair{
			requests: m.httpRequests.WithLabelValues(bounded, strconv.Itoa(code)),
			duration: m.httpDuration.WithLabelValues(bounded),
		}
		if bounded == route { // a route past maxRoutes ("other") is not kept
			m.httpSeries.Store(k, pair)
		}
	}
	pair.requests.Inc()
	pair.duration.Observe(d.Seconds())
}

// httpKey is a request's route pattern and status code, as HTTPRequest
// is given them; httpPair the series they move. httpSeries keeps only
// routes within maxRoutes, so it grows no further than they times the
// status codes.
type httpKey struct {
	route string
	code  int
}

type httpPair struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// AuthFailure counts one local API request refused for its bearer token;
// reason is "missing", "malformed" or "wrong".
func (m *Metrics) AuthFailure(reason string) {
	if m == nil {
		return
	}
	m.authFailures.WithLabelValues(labelValue(reason)).Inc()
}

// ConnClosedAtCap counts one local API connection closed at the
// connection cap: the oldest idle one, or, when allBusy, the new one.
func (m *Metrics) ConnClosedAtCap(allBusy bool) {
	if m == nil {
		return
	}
	which := "idle"
	if allBusy {
		which = "new"
	}
	m.capClosed.WithLabelValues(which).Inc()
}

// ReceiptAccepted counts one create answered from the queue: stored now,
// or a replay of an earlier acceptance. It stands in for a log line per
// receipt, which the API writes at debug level only.
func (m *Metrics) ReceiptAccepted(replayed bool) {
	if m == nil {
		return
	}
	if replayed {
		m.accepted[1].Inc()
	} else {
		m.accepted[0].Inc()
	}
}

func (m *Metrics) boundedRoute(route string) string {
	m.routesMu.Lock()
	defer m.routesMu.Unlock()
	if _, ok := m.routes[route]; ok {
		return route
	}
	if len(m.routes) >= maxRoutes {
		return "other"
	}
	m.routes[route] = struct{}{}
	return route
}

// labelValue makes any string a legal label value: the client library
// panics on invalid UTF-8.
func labelValue(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// initHTTP builds the local API's series: requests, their duration,
// refused authentication and connections closed at the cap.
func (m *Metrics) initHTTP() {
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "http_requests_total",
		Help: "Local API requests by route pattern and status code.",
	}, []string{"route", "code"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "http_request_duration_seconds",
		Help:    "Local API request duration by route pattern.",
		Buckets: httpBuckets,
	}, []string{"route"})
	m.authFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "auth_failures_total",
		Help: "Local API requests refused for a missing, malformed or wrong bearer token.",
	}, []string{"reason"})
	m.capClosed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "connections_closed_at_cap_total",
		Help: "Local API connections closed at max_connections: the oldest idle one (idle), or the new one when all were busy (new).",
	}, []string{"which"})
}
