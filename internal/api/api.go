package api

import (
	"context"
	"net/http"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/cache"
	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/posapi"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/statuspage"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/syncer"
)

// Defaults for zero Options fields.
const (
	DefaultMaxWait         = 60 * time.Second
	DefaultMaxBody         = 1 << 20
	DefaultShutdownTimeout = 5 * time.Second
	// MaxHeaderBytes bounds the request line and headers of one request.
	MaxHeaderBytes = 64 << 10
	// MaxIdempotencyKey bounds the length of an Idempotency-Key header.
	MaxIdempotencyKey = 255
)

// Headers of the local API.
const (
	HeaderQueueID           = "X-Queue-Id"
	HeaderReplayed          = "Idempotent-Replayed"
	HeaderIdempotencyKey    = "Idempotency-Key"
	HeaderPrefer            = "Prefer"
	HeaderPreferenceApplied = "Preference-Applied"
)

// Deps are the parts of receiptd the API serves from. Store, Queue and Log
// are required. Worker and Answers (the mailbox the worker puts the
// upstream's answers in) may be nil: then nothing waits, and every accepted
// request is answered 202. Lookups may be nil (lookup routes answer 503),
// Metrics and NoteTIN may be nil.
type Deps struct {
	Store   *store.Store
	Queue   *queue.Queue
	Worker  *syncer.Worker
	Answers *syncer.Mailbox
	Lookups http.Handler
	Metrics *metrics.Metrics
	Log     *zap.Logger
	// NoteTIN is told every merchant TIN of an accepted receipt, so the
	// lookup cache can warm its merchant info.
	NoteTIN func(tin string)
	// Freshness, when set, gives the lookup cache's freshness for the
	// status page.
	Freshness func() []cache.KindStatus
	// Warmth, when set, tells the status page whether the lookup cache
	// holds what the till needs offline.
	Warmth func() cache.Warmth
	// PosAPI, when set, is what is known of PosAPI's own limits (posapi
	// in /receiptd/status, the status page); nil: all unknown.
	PosAPI *posapi.Watcher
	// Backup, when set, gives the snapshot loop's state for
	// /receiptd/status and the status page.
	Backup func() backup.Status
	// Fleet, when set, reports the push to the head office for
	// /receiptd/status and the status page; nil: the push is off.
	Fleet func() FleetState
	// Control, when set, reports the OpAMP channel to the head office
	// (control.Client.Status) for /receiptd/status and the status page;
	// nil: the channel is off.
	Control func() control.Status
	// Update, when set, takes POST /receiptd/update (switch to the release
	// staged by `receiptd update apply`) and GET /receiptd/update; nil:
	// both answer 503.
	Update Updater
	// UpdateState, when set, reads update.json (release.ReadState) for
	// /receiptd/status's update and the status page; nil: idle.
	UpdateState func() (release.State, error)
}

// Options tune the API. Every zero value means the default given.
type Options struct {
	Wait    time.Duration // accept.wait; zero: no wait, 202 at once (the default lives in config)
	MaxWait time.Duration // bound on Prefer: wait=N; zero: DefaultMaxWait
	// Token is auth.token; empty means no authentication.
	Token string
	// MetricsToken is auth.metrics_token: it opens GET /metrics and no
	// other route; empty: none. Set, it is needed on /metrics even
	// without Token.
	MetricsToken string
	// AllowedHosts are Host names accepted besides the loopback ones
	// (localhost, 127.0.0.0/8, [::1]); compared without case and port.
	AllowedHosts []string
	// Location is the zone of the idempotency day; nil means time.Local.
	Location *time.Location
	// UnsentWarn and UnsentCritical are the ageing thresholds reported by
	// /receiptd/status; zero: 24h and 72h.
	UnsentWarn, UnsentCritical time.Duration
	Version                    string
	MaxBody                    int64 // zero: DefaultMaxBody (1 MiB)
	// ShutdownTimeout bounds how long Serve waits for requests in flight
	// once its context ends; zero: DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// QueuedAnswer is accept.queued_answer: QueuedAnswer202 (also the
	// zero value) or QueuedAnswerError.
	QueuedAnswer string
	// RetryAfter is the Retry-After of a queued answer; zero:
	// DefaultRetryAfter.
	RetryAfter time.Duration
	// MaxConns caps the open connections of each listener Serve runs
	// (max_connections); zero: DefaultMaxConns.
	MaxConns int
	// Rules are the tax service's rules POST /rest/receipt refuses by
	// (accept.skip_rules switches some off); nil: every rule.
	Rules *receipt.Rules
	// LogFile and LogTerminal say where the status page sends a person to
	// read the log (statuspage.Data's fields of the same names).
	LogFile     string
	LogTerminal bool
	// OutageCritical is alerts.outage_critical_after: how long the tax
	// service may be out of reach before the page's card and
	// /receiptd/status's alert are critical (a warning until then); zero:
	// 15 minutes.
	OutageCritical time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.UnsentWarn <= 0 {
		o.UnsentWarn = 24 * time.Hour
	}
	if o.UnsentCritical <= 0 {
		o.UnsentCritical = 72 * time.Hour
	}
	if o.OutageCritical <= 0 {
		o.OutageCritical = 15 * time.Minute
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.QueuedAnswer == "" {
		o.QueuedAnswer = QueuedAnswer202
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	return o
}

// Server is the local API. Create it with New; Handler and Serve may be
// used from any goroutine, and Serve may run on several listeners at once.
type Server struct {
	d       Deps
	o       Options
	log     *zap.Logger
	ready   atomic.Bool
	handler http.Handler
	// quit ends every wait for an upstream answer once a Serve is shutting
	// down, so waiting POS requests get their 202 instead of delaying it.
	quit     context.Context
	quitOnce context.CancelFunc
	authFail authFailures
}

// New returns a Server; it starts nothing. It is not ready (/readyz 503)
// until SetReady(true).
func New(d Deps, o Options) *Server {
	if d.Log == nil {
		d.Log = zap.NewNop()
	}
	s := &Server{d: d, o: o.withDefaults(), log: d.Log.Named("api")}
	s.quit, s.quitOnce = context.WithCancel(context.Background())
	s.handler = s.routes()
	return s
}

// Handler returns the whole route table behind the security rules and the
// request metrics.
func (s *Server) Handler() http.Handler { return s.handler }

// SetReady sets what /readyz answers.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rest/receipt", s.createReceipt)
	mux.HandleFunc("DELETE /rest/receipt", s.deleteReceipt)
	mux.HandleFunc("GET /receiptd/entries/{queueId}", s.getEntry)
	mux.HandleFunc("GET /receiptd/entries", s.listEntries)
	mux.HandleFunc("GET /receiptd/entries/{queueId}/answer", s.getAnswer)
	mux.HandleFunc("POST /receiptd/entries/{queueId}/retry", s.retryEntry)
	mux.HandleFunc("GET /receiptd/status", s.status)
	mux.HandleFunc("GET /receiptd/backup", s.backup)
	mux.HandleFunc("POST /receiptd/update", s.switchRelease)
	mux.HandleFunc("GET /receiptd/update", s.updateStatus)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /{$}", statuspage.Handler(s.pageData, s.log))
	mux.Handle("GET /metrics", s.d.Metrics.Handler())
	lookups := s.d.Lookups
	if lookups == nil {
		lookups = http.HandlerFunc(noLookups)
	}
	for _, p := range lookupRoutes {
		mux.Handle("GET "+p, lookups)
	}
	mux.Handle("POST /api/tpi/receipt/saveOprMerchants", lookups)
	return markBusy(s.measure(s.secure(rejectUncleanClassification(mux))))
}

// classificationPrefix is the classification lookup's path below which
// every segment must be a real one.
const classificationPrefix = "/api/info/check/barcode/v2/"

// rejectUncleanClassification answers 400 for an empty or dot segment in a
// classification path (//, /./, /../, a trailing slash). Left to the
// ServeMux, such a path is redirected to its cleaned form: a different
// lookup than the one asked for.
func rejectUncleanClassification(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if strings.HasPrefix(p, classificationPrefix) && path.Clean(p) != p {
			writeJSON(w, http.StatusBadRequest, map[string]any{
				"msg": "classification path: empty or dot segment", "status": http.StatusBadRequest, "data": nil,
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// lookupRoutes are served by Deps.Lookups (the lookup cache), with
// POST /api/tpi/receipt/saveOprMerchants.
var lookupRoutes = []string{
	"/rest/info", "/rest/bankAccounts", "/rest/sendData",
	"/api/info/check/getBranchInfo", "/api/receipt/receipt/getProductTaxCode",
	"/api/info/check/getInfo", "/api/info/check/getTinInfo",
	"/api/info/check/barcode/v2", "/api/info/check/barcode/v2/",
	"/api/inventory/stock/getStockQr",
}

func noLookups(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{
		"msg": "lookups are not configured", "status": http.StatusServiceUnavailable, "data": nil,
	})
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	// A database file moved, deleted or replaced fails /readyz at once:
	// nothing else looks at the file while nothing is committed. So does a
	// database that refuses every write (a failed commit or write-ahead log).
	if !s.ready.Load() || s.d.Store != nil && (s.d.Store.CheckIdentity() != nil || s.d.Store.Err() != nil) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
