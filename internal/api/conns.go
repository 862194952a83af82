package api

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultMaxConns is the connection cap of one listener when
// Options.MaxConns is zero (max_connections). A till's POS programs need a
// handful; the cap bounds what another local process can make receiptd
// hold (memory and file descriptors).
const DefaultMaxConns = 256

// connLimit caps the open connections of one listener without ever
// starving a new one: when the cap is reached, the oldest connection that
// is not busy (idle between requests, never sent a request, or still
// sending its headers or body) is closed to make room. A connection is
// busy from the moment its request has been read whole until its answer
// has been written, so a request that has arrived is always answered. Only
// when every connection is busy is the new one closed at once. A
// connection chosen to be closed is closing from that moment, under the
// same lock as busy: a request whose body arrives whole after that fails
// to read (errClosedAtCap), so nothing it asks is carried out unanswered.
//
// Blocking Accept at the cap (netutil.LimitListener's way) would let
// anyone holding idle connections lock the POS out; closing the oldest
// idle one costs a well-behaved client at most a reconnect.
type connLimit struct {
	net.Listener
	max     int
	log     *zap.Logger
	onClose func(busy bool) // counts a connection closed at the cap

	mu      sync.Mutex
	open    map[*limitedConn]struct{}
	evicted int       // since the last log line
	logged  time.Time // when the cap was last logged
}

var _ net.Listener = (*connLimit)(nil)

func newConnLimit(ln net.Listener, max int, log *zap.Logger, onClose func(allBusy bool)) *connLimit {
	return &connLimit{Listener: ln, max: max, log: log, onClose: onClose, open: make(map[*limitedConn]struct{}, max)}
}

// limitedConn is one connection of a connLimit; its fields are guarded
// by the connLimit's mu.
type limitedConn struct {
	net.Conn
	l    *connLimit
	busy bool
	// closing: chosen to be closed for a new connection; it never turns
	// busy again.
	closing bool
	since   time.Time // accepted, or last answer written: the age of its idleness
	once    sync.Once
}

var _ net.Conn = (*limitedConn)(nil)

func (c *limitedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.open, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// Accept returns the next connection, first making room for it.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &limitedConn{Conn: nc, l: l, since: time.Now()}
		victim, ok := l.admit(c)
		if victim != nil {
			_ = victim.Close()
			l.onClose(false)
		}
		if ok {
			return c, nil
		}
		_ = nc.Close()
		l.onClose(true)
	}
}

// admit adds c, choosing the connection to close for it (nil when there
// is room); ok is false when every open connection is busy.
func (l *connLimit) admit(c *limitedConn) (victim *limitedConn, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.open) >= l.max {
		for o := range l.open {
			if !o.busy && (victim == nil || o.since.Before(victim.since)) {
				victim = o
			}
		}
		l.evicted++
		if now := time.Now(); now.Sub(l.logged) >= time.Minute {
			l.log.Warn("connection cap reached: closing the oldest idle connection for each new one (max_connections)",
				zap.Int("max", l.max), zap.Int("closed", l.evicted), zap.Bool("allBusy", victim == nil))
			l.logged, l.evicted = now, 0
		}
		if victim == nil {
			return nil, false
		}
		delete(l.open, victim) // its Close finds it gone
		victim.closing = true
	}
	l.open[c] = struct{}{}
	return victim, true
}

// errClosedAtCap is what reading a request's body gives on a connection
// chosen to be closed at the cap.
var errClosedAtCap = errors.New("connection closed at the connection cap (max_connections)")

// setBusy marks c busy or idle; it reports false, and leaves c as it is,
// when c is closing.
func (l *connLimit) setBusy(c *limitedConn, busy bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closing {
		return false
	}
	if c.busy && !busy {
		c.since = time.Now()
	}
	c.busy = busy
	return true
}

// connState is the http.Server's ConnState hook: an answer written
// (StateIdle) ends the busy time of a connection.
func connState(nc net.Conn, s http.ConnState) {
	if c, ok := nc.(*limitedConn); ok && s == http.StateIdle {
		c.l.setBusy(c, false)
	}
}

// connKey carries a request's *limitedConn in its context.
type connKey struct{}

// markBusy marks a request's connection busy once its body has been read
// whole (at once for a request without one).
func markBusy(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*limitedConn)
		switch {
		case c == nil:
		case r.Body == nil || r.Body == http.NoBody:
			if !c.l.setBusy(c, true) {
				return // closing: no answer could be written
			}
		default:
			r.Body = &busyAtEOF{ReadCloser: r.Body, c: c}
		}
		next.ServeHTTP(w, r)
	})
}

// busyAtEOF marks its connection busy when the body has been read to its
// end (or failed: the handler is answering now).
type busyAtEOF struct {
	io.ReadCloser
	c *limitedConn
}

var _ io.Reader = (*busyAtEOF)(nil)

func (b *busyAtEOF) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.c != nil {
		ok := b.c.l.setBusy(b.c, true)
		b.c = nil
		if !ok {
			return n, errClosedAtCap
		}
	}
	return n, err
}

// connContext stores the connection for markBusy, and whether it came
// over a Unix socket for the Host check.
func connContext(unix bool) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, nc net.Conn) context.Context {
		ctx = context.WithValue(ctx, connKind{}, unix)
		if c, ok := nc.(*limitedConn); ok {
			ctx = context.WithValue(ctx, connKey{}, c)
		}
		return ctx
	}
}
