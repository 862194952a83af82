package daemon

import (
	"errors"
	"net"
	"sync"
)

// handoff keeps one bound listener open across Daemons: a single
// goroutine accepts on it and hands each connection to whichever view is
// accepting at the moment. Between two Daemons nobody takes the
// connection it holds, so it waits, and the ones after it wait in the
// kernel's backlog, until the next Daemon's view accepts: a POS that
// connects during a swap is answered by the new Daemon, never refused.
type handoff struct {
	// addr is the listener's address, the same across a rebind.
	addr  net.Addr
	conns chan accepted // unbuffered: a connection moves only to a view that takes it
	// back holds connections a view received as it was being closed;
	// the next view takes them first. A view returns at most one.
	back chan accepted
	stop chan struct{}

	// mu guards the fields below: the listener (rebind replaces a
	// closed one on Windows, switch_windows.go), the acceptLoop running
	// now (suspend ends it, resume starts another) and what it held as
	// it ended.
	mu   sync.Mutex
	ln   net.Listener
	quit chan struct{} // closed by suspend
	done chan struct{} // this acceptLoop has returned
	held []net.Conn
	// suspended: suspend ended the loop and resume has not started
	// another.
	suspended bool
}

type accepted struct {
	c   net.Conn
	err error
}

// backSlots bounds handoff.back: one per view closed while it received a
// connection, and views are closed one at a time.
const backSlots = 8

func newHandoff(ln net.Listener) *handoff {
	h := &handoff{addr: ln.Addr(), ln: ln, conns: make(chan accepted), back: make(chan accepted, backSlots),
		stop: make(chan struct{})}
	h.startLoop()
	return h
}

func (h *handoff) startLoop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.quit, h.done = make(chan struct{}), make(chan struct{})
	go h.acceptLoop(h.ln, h.quit, h.done)
}

// listener is the listener accepted on now.
func (h *handoff) listener() net.Listener {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ln
}

// acceptLoop passes every Accept's result on, errors included (the view's
// http.Server decides, as it would on the listener itself, whether to
// retry or stop). It ends when the listener is closed, or when quit is
// closed (suspend): a connection it holds then is kept in held.
func (h *handoff) acceptLoop(ln net.Listener, quit, done chan struct{}) {
	defer close(done)
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		select {
		case <-quit:
			h.hold(c)
			return
		default:
		}
		select {
		case h.conns <- accepted{c, err}:
		case <-quit:
			h.hold(c)
			return
		case <-h.stop:
			if c != nil {
				_ = c.Close()
			}
			return
		}
	}
}

func (h *handoff) hold(c net.Conn) {
	if c == nil {
		return
	}
	h.mu.Lock()
	h.held = append(h.held, c)
	h.mu.Unlock()
}

// close closes the listener and waits for acceptLoop. Connections handed
// back and never taken are closed. A listener closed already (a switch
// on Windows) is no error.
func (h *handoff) close() error {
	close(h.stop)
	err := h.listener().Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	h.mu.Lock()
	done, held := h.done, h.held
	h.held = nil
	h.mu.Unlock()
	<-done
	for _, c := range held {
		_ = c.Close()
	}
	for {
		select {
		case a := <-h.back:
			if a.c != nil {
				_ = a.c.Close()
			}
		default:
			return err
		}
	}
}

// view returns a listener over h for one Daemon. Closing it ends its
// Accept without closing h.
func (h *handoff) view() net.Listener { return &handoffView{h: h, closed: make(chan struct{})} }

type handoffView struct {
	h      *handoff
	closed chan struct{}
	once   sync.Once
}

func (v *handoffView) Accept() (net.Conn, error) {
	select {
	case <-v.closed:
		return nil, net.ErrClosed
	case a := <-v.h.back:
		return a.c, a.err
	default:
	}
	var a accepted
	select {
	case <-v.closed:
		return nil, net.ErrClosed
	case a = <-v.h.back:
	case a = <-v.h.conns:
	}
	select {
	case <-v.closed:
		// Closed while receiving: the connection belongs to the next
		// view, not to a server that is shutting down.
		v.giveBack(a)
		return nil, net.ErrClosed
	default:
		return a.c, a.err
	}
}

func (v *handoffView) giveBack(a accepted) {
	if a.c == nil {
		return
	}
	select {
	case v.h.back <- a:
	default: // cannot happen (backSlots); never block a closing server
		_ = a.c.Close()
	}
}

func (v *handoffView) Close() error {
	v.once.Do(func() { close(v.closed) })
	return nil
}

func (v *handoffView) Addr() net.Addr { return v.h.addr }
