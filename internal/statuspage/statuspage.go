package statuspage

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// RefreshSeconds is how often the page reloads itself.
const RefreshSeconds = 5

// MaxFailures is how many failures the page shows at most, newest first;
// the rest are dropped so a bad day cannot make the page unreadable.
const MaxFailures = 50

// Alert levels of Data.Alert, as /receiptd/status reports them.
const (
	AlertNone     = "none"
	AlertWarn     = "warn"
	AlertCritical = "critical"
)

// Data is everything the page shows. The zero value renders (an empty
// queue, the tax service shown as unreachable since an unknown time).
type Data struct {
	Version string
	// Now is the moment the data was gathered; ages are measured from it
	// and times are shown in its location.
	Now time.Time

	// UpstreamUp is whether the tax service is reachable; UpstreamSince is
	// when that last changed (zero: unknown).
	UpstreamUp    bool
	UpstreamSince time.Time
	// LastSuccess is when the tax service last accepted a request (zero:
	// not since start). LastError is the text of the last failure, if any.
	LastSuccess time.Time
	LastError   string
	// LastErrorAt is when LastError happened (zero: unknown). While the
	// tax service is up, the page shows LastError as past, with this date.
	LastErrorAt time.Time
	// OutageCritical is how long the tax service may be out of reach
	// before its card is critical (alerts.outage_critical_after); until
	// then it is a warning, so a blip of the shop's internet does not page
	// anyone. Zero: critical at once.
	OutageCritical time.Duration

	// DiskFull is the last write's "cannot grow" error (empty: the last
	// write worked) and DiskFullSince when such errors began.
	// DatabaseFailed is why the database refuses every write until
	// receiptd restarts (empty: it takes writes). DatabasePath is the
	// database file, for the next step's command.
	DiskFull       string
	DiskFullSince  time.Time
	DatabaseFailed string
	DatabasePath   string

	// Counts are entries by state (queued, sending, sent, payment,
	// rejected, held, cancelled, delete_queued, deleted, delete_rejected).
	// Absent states show as zero; unknown states are shown after the known
	// ones.
	Counts map[string]int

	// OldestUnsentAge is the age of the oldest entry not yet accepted
	// upstream (0: none). Alert is its level, AlertNone, AlertWarn or
	// AlertCritical; UnsentWarn and UnsentCritical are the thresholds, shown
	// in the words of the level.
	OldestUnsentAge time.Duration
	Alert           string
	UnsentWarn      time.Duration
	UnsentCritical  time.Duration

	// Failures are the last failures, in any order (the page sorts them
	// newest first and keeps MaxFailures).
	Failures []Failure

	// Cache is the lookup cache's freshness, one row per kind of lookup.
	Cache []CacheKind
	// Offline is whether the cache holds what a till needs offline; nil:
	// not known (the block is left out).
	Offline *Offline
	// PosAPI is PosAPI's own limits (lottery reserve, last send, clock);
	// nil: not known (no item).
	PosAPI *PosAPI
	// Backup is the snapshot loop's state; nil: snapshots are off.
	Backup *Backup
	// Fleet is the push to the head office; nil: off.
	Fleet *Fleet
	// Control is the OpAMP channel to the head office; nil: off.
	Control *Control
	// Update is the update's state; nil: no release was ever offered.
	Update *Update

	// LogFile is log.file ("": standard error). LogTerminal: standard
	// error is the terminal receiptd runs in (run in the foreground, the
	// demo), not a service manager's journal. Both zero: a service's
	// defaults (the journal; the log file on Windows).
	LogFile     string
	LogTerminal bool
}

// Failure is one failed attempt or rejected entry.
type Failure struct {
	QueueID  string
	Kind     string // receipt or delete
	State    string // the entry's state now
	At       time.Time
	Message  string // the upstream's message or the error's text
	Attempts int
}

// CacheKind is the freshness of one kind of lookup in the cache.
type CacheKind struct {
	Kind        string
	Entries     int
	OldestAge   time.Duration // age of the oldest entry (0: none)
	LastRefresh time.Time     // zero: never refreshed since start
	LastError   string        // the last refresh's failure, if any
}

//go:embed page.html.tmpl
var files embed.FS

var page = template.Must(template.New("page.html.tmpl").
	Funcs(template.FuncMap{"lower": strings.ToLower}).
	ParseFS(files, "page.html.tmpl"))

// Render writes the page for d to w.
func Render(w io.Writer, d Data) error {
	if err := page.Execute(w, newView(d)); err != nil {
		return fmt.Errorf("render status page: %w", err)
	}
	return nil
}

// Handler serves the page at the path "/" (any other path is 404, so a
// catch-all mount cannot turn every unknown URL into the page). It answers
// GET and HEAD only (405 otherwise). It calls source with the request's
// context on every request; when source or rendering fails it logs the
// error and answers 500 with a short text that does not repeat it. A nil
// log discards.
func Handler(source func(ctx context.Context) (Data, error), log *zap.Logger) http.Handler {
	if log == nil {
		log = zap.NewNop()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		var buf bytes.Buffer
		d, err := source(r.Context())
		if err == nil {
			err = Render(&buf, d)
		}
		if err != nil {
			log.Error("status page", zap.Error(err))
			http.Error(w, "status page unavailable; the details are in receiptd's log", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Length", strconv.Itoa(buf.Len()))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(buf.Bytes()) // a client gone away is not ours to report
		}
	})
}

// contentSecurityPolicy allows exactly what the page uses: its own inline
// style and the empty data: favicon. No script can run, even if escaping
// were ever broken.
const contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// FirstLine is the page's verdict in one line, as a head office reads it
// beside the till's health ([control]): "Nothing needs attention", or how
// many things do and the most urgent one's title. Like Alert it needs no
// Failures: they only list examples under a card, never change its title.
func FirstLine(d Data) string {
	items := attention(d, waitingOf(d), nil)
	switch n := len(items); n {
	case 0:
		return "Nothing needs attention"
	case 1:
		return "Needs attention: " + items[0].Title
	default:
		return fmt.Sprintf("%d need attention; first: %s", n, items[0].Title)
	}
}
