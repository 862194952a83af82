package client

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// PredialFresh is how old a predialed connection may be when a create
// takes it, and how long a kept connection may have been idle; an older
// one is closed and the create dials its own.
const PredialFresh = 100 * time.Millisecond

// Predial is the connection of one create: the connection of the last
// create, when its answer ended within PredialFresh/2 (a busy till), or
// one dialed while the record that makes the entry sending is being
// flushed, so that the TCP handshake costs the sale nothing. A kept
// connection is taken only within PredialFresh of its last answer, and
// only when a look at its socket finds it open with nothing to read
// (alive; Linux only: elsewhere each create has a connection of its
// own), long before any server closes a connection for idleness
// (docs/decisions/limits.md); a dialed one only within PredialFresh of
// its dial. The request is written on it only once the record is
// durable, as always. Whether the request was written is told by the same
// transport callbacks as on a connection the transport dials itself.
type Predial struct {
	addr   string
	start  time.Time          // the dial, or the kept connection's last answer
	kept   bool               // conn is a kept connection, not a new one
	cancel context.CancelFunc // ends a dial still running at Close
	done   chan struct{}      // closed when the dial has ended
	conn   net.Conn           // nil when the dial failed
	mu     sync.Mutex
	taken  bool // by a create, or closed
}

// Predial takes a kept connection for one create, or starts dialing the
// tax service's PosAPI for it, and returns at once; nil when creates do
// not go straight to it (a proxy). The caller passes it to CreateReceipt
// with WithPredial, and calls Close in any case once the create has
// returned or will not be sent.
func (c *Client) Predial() *Predial {
	if c.predialAddr == "" {
		return nil
	}
	if conn, since := c.warm.take(); conn != nil {
		if time.Since(since) <= PredialFresh/2 {
			done := make(chan struct{})
			close(done)
			return &Predial{addr: c.predialAddr, start: since, kept: true, cancel: func() {}, done: done, conn: conn}
		}
		_ = conn.Close() // it could be too old by the time the record is flushed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	p := &Predial{addr: c.predialAddr, start: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		d := net.Dialer{KeepAlive: 30 * time.Second}
		p.conn, _ = d.DialContext(ctx, "tcp", p.addr)
	}()
	return p
}

// Close ends the dial if it still runs, waits for it, and closes its
// connection unless a create took it. It may be called more than once.
func (p *Predial) Close() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.taken && p.conn != nil {
		_ = p.conn.Close()
	}
	p.taken = true
}

// take returns the predialed connection for addr once, while fresh; nil
// otherwise (the create dials its own).
func (p *Predial) take(ctx context.Context, addr string) net.Conn {
	if p == nil || addr != p.addr {
		return nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil
	}
	if ctx.Err() != nil { // both were ready: the create ends unsent
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.taken || p.conn == nil {
		return nil
	}
	p.taken = true
	if time.Since(p.start) > PredialFresh || p.kept && !alive(p.conn) {
		_ = p.conn.Close()
		return nil
	}
	return p.conn
}

type predialKey struct{}

// WithPredial returns ctx carrying p for the create sent with it.
func WithPredial(ctx context.Context, p *Predial) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, predialKey{}, p)
}

// predialDial wraps the send transport's dial (TLS): the create's
// predialed connection when it has a fresh one that is not kept (a kept
// one carried plain HTTP), else a dial of its own.
func predialDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p, _ := ctx.Value(predialKey{}).(*Predial); p != nil && !p.kept && network == "tcp" {
			if conn := p.take(ctx, addr); conn != nil {
				return conn, nil
			}
		}
		return dial(ctx, network, addr)
	}
}

// predialAddr is the host:port creates are dialed to when they go
// straight to base (no proxy for it), else "".
func predialAddr(base string, proxy func(*http.Request) (*url.URL, error)) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	if proxy != nil {
		if pu, err := proxy(&http.Request{URL: u}); err != nil || pu != nil {
			return ""
		}
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}
