package client

import (
	"net"
	"sync"
	"time"
)

// maxWarm bounds the connections kept for the next creates: one for each
// send that may run at once (sync.concurrency) on a busy till.
const maxWarm = 4

// warmConn is a connection whose create was answered in full and that the
// tax service did not ask to close, kept for the next create until
// PredialFresh after that answer (docs/decisions/limits.md).
type warmConn struct {
	conn  net.Conn
	since time.Time   // the answer read to its end
	timer *time.Timer // closes it once it is too old to be taken
}

// warmPool holds the warm connections of one Client, newest last.
type warmPool struct {
	mu    sync.Mutex
	conns []*warmConn
}

// put keeps conn for a next create, or closes it where connections are not
// reused, or when maxWarm are kept already.
func (p *warmPool) put(conn net.Conn) {
	if !reuseSupported {
		_ = conn.Close()
		return
	}
	w := &warmConn{conn: conn, since: time.Now()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.conns) >= maxWarm {
		_ = conn.Close()
		return
	}
	w.timer = time.AfterFunc(PredialFresh, func() { p.expire(w) })
	p.conns = append(p.conns, w)
}

// expire closes w if no create took it.
func (p *warmPool) expire(w *warmConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.conns {
		if x == w {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			_ = w.conn.Close()
			return
		}
	}
}

// take returns the newest warm connection and when its last answer ended,
// or nil.
func (p *warmPool) take() (net.Conn, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	if n == 0 {
		return nil, time.Time{}
	}
	w := p.conns[n-1]
	p.conns = p.conns[:n-1]
	w.timer.Stop()
	return w.conn, w.since
}

// closeAll closes every warm connection.
func (p *warmPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.conns {
		w.timer.Stop()
		_ = w.conn.Close()
	}
	p.conns = nil
}
