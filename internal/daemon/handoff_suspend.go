package daemon

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// deadliner is a listener whose Accept a deadline interrupts (TCP and
// Unix listeners).
type deadliner interface {
	SetDeadline(t time.Time) error
}

// suspend stops h's acceptLoop without closing the listener, so another
// process can accept on it (the switch to a new version): connections
// the kernel queues meanwhile wait in its backlog. It returns the
// connections accepted and not yet served (the one the loop held and the
// ones views handed back), which the caller now owns. No view may be
// accepting: the Daemon was stopped first.
func (h *handoff) suspend() ([]net.Conn, error) {
	dl, ok := h.listener().(deadliner)
	if !ok {
		return nil, fmt.Errorf("listener %s cannot be handed on", h.addr)
	}
	h.mu.Lock()
	if h.suspended {
		h.mu.Unlock()
		return nil, fmt.Errorf("listener %s is handed on already", h.addr)
	}
	h.suspended = true
	quit, done := h.quit, h.done
	h.mu.Unlock()
	close(quit)
	if err := dl.SetDeadline(time.Now()); err != nil && !errors.Is(err, net.ErrClosed) {
		return nil, fmt.Errorf("interrupt accept on %s: %w", h.addr, err)
	}
	<-done
	if err := dl.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clear the deadline on %s: %w", h.addr, err)
	}
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	for {
		select {
		case a := <-h.back:
			if a.c != nil {
				held = append(held, a.c)
			}
		default:
			return held, nil
		}
	}
}

// resume starts accepting again after suspend; conns (those suspend
// returned, when nobody took them) are served first. On a handoff that
// is not suspended it only queues conns: one accept loop at a time.
func (h *handoff) resume(conns []net.Conn) {
	h.seed(conns)
	h.mu.Lock()
	was := h.suspended
	h.suspended = false
	h.mu.Unlock()
	if was {
		h.startLoop()
	}
}

// seed gives h connections accepted by another process (inherited at a
// switch), served before any new one.
func (h *handoff) seed(conns []net.Conn) {
	for _, c := range conns {
		select {
		case h.back <- accepted{c: c}:
		default:
			_ = c.Close()
		}
	}
}
