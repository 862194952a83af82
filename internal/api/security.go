package api

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// connKind marks requests that arrived on a Unix socket (see Serve).
type connKind struct{}

// secure applies the security rules of the package doc, in their order,
// before any route runs.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		unix, _ := r.Context().Value(connKind{}).(bool)
		if !unix && !s.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, "host "+quoteHost(r.Host)+" is not allowed: use localhost or a configured name")
			return
		}
		if msg := crossOrigin(r); msg != "" {
			writeError(w, http.StatusForbidden, msg)
			return
		}
		if msg := s.authorize(r); msg != "" {
			s.authFailed(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="receiptd"`)
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		if s.o.Token != "" {
			// receiptd's own token: no route may pass it on (the stock QR
			// lookup forwards the POS's Authorization upstream).
			r.Header.Del("Authorization")
		}
		if r.Method == http.MethodPost || r.Method == http.MethodDelete {
			if !isJSON(r.Header.Get("Content-Type")) {
				writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
				return
			}
			if r.ContentLength > s.o.MaxBody {
				writeError(w, http.StatusRequestEntityTooLarge, tooLarge(s.o.MaxBody))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a Host header names this machine's loopback
// interface or a configured name. An absent Host (HTTP/1.0) is allowed: a
// browser always sends one.
func (s *Server) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return true
	}
	for _, a := range s.o.AllowedHosts {
		if strings.EqualFold(host, strings.Trim(a, "[]")) {
			return true
		}
	}
	return false
}

// crossOrigin returns why a browser request from another origin is refused,
// or "" when the request is not a cross-origin browser request.
func crossOrigin(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return "cross-origin browser requests are refused (Sec-Fetch-Site: " + site + ")"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return "cross-origin browser requests are refused (Origin does not match Host)"
	}
	return ""
}

// authorize applies rule 3 of the package doc and returns why the request
// is refused, or "" when it may go on. The metrics token opens GET /metrics
// and nothing else, whether or not auth.token is set: a scraper holding it
// never holds the key to the receipts. With only a metrics token set,
// /metrics needs it and every other route stays as open as loopback makes
// it, except to a request that presents the metrics token (a scraper's key
// used elsewhere is a mistake or an attack, never an anonymous caller).
func (s *Server) authorize(r *http.Request) string {
	if r.URL.Path == "/healthz" {
		return ""
	}
	metricsRoute := r.URL.Path == "/metrics" && (r.Method == http.MethodGet || r.Method == http.MethodHead)
	if s.o.MetricsToken != "" && s.bearerIs(r, s.o.MetricsToken) {
		if metricsRoute {
			return ""
		}
		return "auth.metrics_token opens GET /metrics only"
	}
	switch {
	case s.o.Token != "" && s.bearerIs(r, s.o.Token):
		return ""
	case s.o.Token != "":
		return "missing or wrong bearer token (Authorization: Bearer <auth.token>)"
	case metricsRoute && s.o.MetricsToken != "":
		return "missing or wrong bearer token (Authorization: Bearer <auth.metrics_token>)"
	}
	return ""
}

// bearerIs reports whether the request's bearer credential is want
// (constant-time compare).
func (s *Server) bearerIs(r *http.Request, want string) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(want)) == 1
}

func isJSON(contentType string) bool {
	if contentType == "application/json" { // what POS software sends
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

func tooLarge(limit int64) string {
	return "body: larger than the limit of " + strconv.FormatInt(limit, 10) + " bytes"
}

// quoteHost keeps a hostile Host header from making the answer unreadable.
func quoteHost(h string) string {
	if len(h) > 64 {
		h = h[:64] + "..."
	}
	return `"` + strings.ToValidUTF8(h, "?") + `"`
}

// measure counts every request by its route pattern (never the raw path, so
// the label set stays small) and status code.
func (s *Server) measure(next http.Handler) http.Handler {
	if s.d.Metrics == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		route := r.Pattern // set by the ServeMux on this same request
		if route == "" {
			route = "refused"
		}
		s.d.Metrics.HTTPRequest(route, rec.code, time.Since(start))
	})
}

// statusRecorder remembers the status code written. Unwrap keeps
// http.ResponseController (write deadlines, flushing) working through it.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

// Unwrap is how http.ResponseController reaches the connection through it.
var _ interface{ Unwrap() http.ResponseWriter } = (*statusRecorder)(nil)

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
