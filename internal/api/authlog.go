package api

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// authLogEvery is the most often a failed authentication is logged: a
// guessing program makes thousands a second, and the log must neither
// fill the disk nor lose the fact. The failures in between are counted
// in the next line (and each one in the metrics).
const authLogEvery = time.Minute

// authFailures is the rate limit of the failed-authentication log line.
type authFailures struct {
	mu      sync.Mutex
	last    time.Time // when the last line was written
	pending int       // failures since then
}

// authReason says why a request failed authentication, without a trace
// of what it sent: "missing" (no Authorization header), "malformed" (not
// a Bearer credential) or "wrong".
func authReason(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, _, ok := strings.Cut(h, " ")
	switch {
	case h == "":
		return "missing"
	case !ok || !strings.EqualFold(scheme, "Bearer"):
		return "malformed"
	}
	return "wrong"
}

// authFailed counts a failed authentication and logs it, at most once per
// authLogEvery. The token sent is never logged, nor any part of it.
func (s *Server) authFailed(r *http.Request) {
	reason := authReason(r)
	s.d.Metrics.AuthFailure(reason)
	now := s.o.Now()
	a := &s.authFail
	a.mu.Lock()
	a.pending++
	if !a.last.IsZero() && now.Sub(a.last) < authLogEvery && !now.Before(a.last) {
		a.mu.Unlock()
		return
	}
	n := a.pending
	a.pending, a.last = 0, now
	a.mu.Unlock()
	path := r.URL.Path
	if len(path) > 64 {
		path = path[:64] + "..."
	}
	s.log.Warn("failed authentication: missing or wrong bearer token; further failures are summed at most once a minute",
		zap.String("reason", reason), zap.Int("failures", n), zap.String("remote", r.RemoteAddr),
		zap.String("method", r.Method), zap.String("path", strings.ToValidUTF8(path, "?")))
}
