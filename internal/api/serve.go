package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Timeouts of the http.Server that Serve runs. WriteTimeout leaves room for
// the longest wait a request may ask for (Options.MaxWait). A POS on this
// machine sends its headers in microseconds and reconnects cheaply, so
// a connection that is slow to send its headers, or idle between
// requests, is not kept long: another local process cannot pile them up.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	idleTimeout       = 15 * time.Second
	writeMargin       = 30 * time.Second
	// drainGrace bounds how long a stop waits, its listener closed, for
	// the connections that are waiting for a request (accepted and not
	// read from yet, or kept alive between two) to bring it: net/http
	// drops a request it reads once Shutdown has begun, unanswered
	// (Server.Serve), and Shutdown closes a kept-alive connection a
	// request may be on its way on. A POS sends its request as it
	// connects, and one that keeps its connection sends the next sale on
	// it.
	drainGrace = time.Second
	// idleGrace is drainGrace for a connection kept alive: it waits
	// for a request only this long.
	idleGrace = 100 * time.Millisecond
)

// ErrSocketInUse means another process answers on the Unix socket path
// given to ListenUnix.
var ErrSocketInUse = errors.New("unix socket is in use by another process")

// ErrNotSocket means the path given to ListenUnix holds something other
// than a socket, which ListenUnix refuses to remove.
var ErrNotSocket = errors.New("path exists and is not a unix socket")

// Serve serves the API on ln until ctx ends, then shuts down gracefully.
// It stops accepting (at a swap or a switch the next Daemon takes the
// connections made meanwhile) and drains: every answer now says
// Connection: close, and each connection waiting for a request may bring
// one more: up to drainGrace for one just accepted, idleGrace for one kept
// alive. Only
// then does Shutdown begin, because net/http closes a request it reads
// after that unanswered, and closes kept-alive connections at once: a
// POS would see a sale lost on the wire. Then waiting requests are
// answered 202 at once, requests in flight get up to
// Options.ShutdownTimeout, and connections still open after that are
// closed. It returns nil after a shutdown, or the listener's error. Requests
// on a Unix socket listener skip the Host check (no browser can reach one).
// At most Options.MaxConns connections are open at once (see connLimit).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	unix := ln.Addr().Network() == "unix"
	srv := &http.Server{
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      s.o.MaxWait + writeMargin,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
	}
	srv.ConnContext = connContext(unix)
	waiting := newWaitingConns()
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		waiting.track(c, st)
		connState(c, st)
	}
	var draining atomic.Bool
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			w.Header().Set("Connection", "close") // the next request: to the next Daemon
		}
		s.handler.ServeHTTP(w, r)
	})
	ln = newConnLimit(ln, s.o.MaxConns, s.log.Named("http"), s.d.Metrics.ConnClosedAtCap)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	// Every answer says Connection: close from before the listener
	// closes: a POS that finds the listener closed has its next answer
	// on a kept connection say so. (Set after Serve returned, a request
	// could be answered in between without it: a CI run saw it once.)
	draining.Store(true)
	// No new connection (the next Daemon's, at a swap); Serve returns once
	// it has tracked the last one it accepted.
	var serveErr error
	closed := ln.Close() == nil
	if closed {
		serveErr = <-errc
	}
	s.quitOnce() // requests waiting for the tax service: 202 now
	if closed {
		waiting.wait(drainGrace, idleGrace)
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.o.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("requests still running at shutdown were cut off", zap.Stringer("addr", ln.Addr()), zap.Error(err))
		_ = srv.Close()
	}
	if !closed {
		serveErr = <-errc
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) && !errors.Is(serveErr, net.ErrClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), serveErr)
	}
	return nil
}

// waitingConns tracks the open connections that a Shutdown could cut a
// request off on: accepted and not read yet (http.StateNew), reading or
// answering a request (http.StateActive: net/http drops a request it
// reads once Shutdown began, and an answer begun before the drain does
// not say Connection: close, so the POS sends its next sale on the same
// connection), or kept alive between two (http.StateIdle).
type waitingConns struct {
	mu   sync.Mutex
	conn map[net.Conn]http.ConnState
}

func newWaitingConns() *waitingConns { return &waitingConns{conn: map[net.Conn]http.ConnState{}} }

// track is the http.Server's ConnState hook.
func (f *waitingConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch st {
	case http.StateNew, http.StateIdle, http.StateActive:
		f.conn[c] = st
	default:
		delete(f.conn, c)
	}
}

// counts returns how many connections are busy (new, or with a request)
// and how many are kept alive idle.
func (f *waitingConns) counts() (busy, idle int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, st := range f.conn {
		if st == http.StateIdle {
			idle++
		} else {
			busy++
		}
	}
	return busy, idle
}

// wait waits until no connection is busy (at most grace: a POS sends its
// request as it connects, and each answer is quick once waiting ones
// were answered) and none has been kept alive idle for idleGrace (the
// next sale of a POS that keeps its connection comes at once, and is
// answered with Connection: close; a connection idle longer is a spare,
// and the requests waiting for the next Daemon must not wait for it).
func (f *waitingConns) wait(grace, idleGrace time.Duration) {
	began := time.Now()
	for {
		busy, idle := f.counts()
		waited := time.Since(began)
		if (busy == 0 && (idle == 0 || waited >= idleGrace)) || waited >= grace {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ListenUnix listens on a Unix domain socket at path. A socket file left by
// an earlier run is removed first, unless a process still answers on it
// (ErrSocketInUse); any other kind of file at path is refused (ErrNotSocket).
// On Unix systems the socket gets mode 0660, so only its owner and group can
// connect; on Windows access follows the folder's ACL.
func ListenUnix(path string) (net.Listener, error) {
	if err := removeStale(path); err != nil {
		return nil, fmt.Errorf("listen unix %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen unix %s: %w", path, err)
	}
	if err := restrictSocket(path); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("listen unix %s: %w", path, err)
	}
	return ln, nil
}

// removeStale removes a socket file nobody answers on. Go reports an
// AF_UNIX socket file as fs.ModeSocket on Windows too.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return ErrNotSocket
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return ErrSocketInUse
	}
	return os.Remove(path)
}

// ErrTokenRequired means a listen address reaches beyond this machine while
// auth.token is empty; receiptd must refuse to start.
var ErrTokenRequired = errors.New("listening on a non-loopback address requires auth.token")

// CheckListen refuses a TCP listen address that is not loopback (an empty
// host, 0.0.0.0 and [::] included) when token is empty. Host names other
// than localhost count as non-loopback: what they resolve to can change.
func CheckListen(addr, token string) error {
	if token != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen %q: %w", addr, ErrTokenRequired)
}
