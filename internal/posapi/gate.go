package posapi

import (
	"context"
	"fmt"
	"sync"
)

// gate lets receipt sends run together and a sendData run alone: a send
// holds it shared, a sendData exclusive. A waiting sendData keeps new
// sends out, so a busy till cannot starve it; it waits at most for the
// sends in flight (each bounded by the client's timeout). Both waits end
// with their context.
type gate struct {
	mu       sync.Mutex
	sends    int           // shared holders
	alone    bool          // the exclusive holder is in
	queued   int           // exclusive holders waiting
	released chan struct{} // closed and replaced on every change
}

func (g *gate) changedLocked() chan struct{} {
	if g.released == nil {
		g.released = make(chan struct{})
	}
	return g.released
}

func (g *gate) broadcastLocked() {
	if g.released != nil {
		close(g.released)
		g.released = nil
	}
}

// shared waits until no sendData runs or waits, then holds the gate
// shared; the returned func releases it (exactly once).
func (g *gate) shared(ctx context.Context) (func(), error) {
	g.mu.Lock()
	for g.alone || g.queued > 0 {
		ch := g.changedLocked()
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for PosAPI's sendData to end: %w", ctx.Err())
		}
		g.mu.Lock()
	}
	g.sends++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.sends--
			g.broadcastLocked()
			g.mu.Unlock()
		})
	}, nil
}

// exclusive waits until no send and no other sendData runs, then holds
// the gate alone; the returned func releases it (exactly once).
func (g *gate) exclusive(ctx context.Context) (func(), error) {
	g.mu.Lock()
	g.queued++
	for g.alone || g.sends > 0 {
		ch := g.changedLocked()
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			g.mu.Lock()
			g.queued--
			g.broadcastLocked()
			g.mu.Unlock()
			return nil, fmt.Errorf("wait for the receipts being sent: %w", ctx.Err())
		}
		g.mu.Lock()
	}
	g.queued--
	g.alone = true
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.alone = false
			g.broadcastLocked()
			g.mu.Unlock()
		})
	}, nil
}

// busy reports the shared holders and whether the exclusive one is in
// (tests).
func (g *gate) busy() (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sends, g.alone
}
