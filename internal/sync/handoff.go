package syncer

import (
	"context"
	"time"

	"github.com/receiptd/receiptd/internal/queue"
)

// Result is what one attempt for an entry ended with, as a waiting POS
// needs it.
type Result struct {
	State      queue.State // the entry's state after the attempt; empty when not known
	Answered   bool        // the upstream gave a final answer (SUCCESS, PAYMENT, ERROR, delete done)
	StatusCode int         // the upstream's HTTP status, when Answered
	// Body is the upstream's answer verbatim. It may hold the lottery
	// number and QR data: it must never be written to disk or a log.
	Body []byte
}

// handoffs holds recent results in memory and the POS requests waiting for
// them. It has no lock of its own: Worker.mu guards it.
type handoffs struct {
	ttl     time.Duration
	max     int
	results map[string]heldResult
	order   []heldID // publication order, oldest first, for expiry
	waiters map[string][]chan Result
}

type heldResult struct {
	r  Result
	at time.Time
}

type heldID struct {
	id string
	at time.Time
}

func newHandoffs(ttl time.Duration, max int) handoffs {
	return handoffs{ttl: ttl, max: max, results: map[string]heldResult{}, waiters: map[string][]chan Result{}}
}

// publish keeps r for id and hands it to everyone waiting for id.
func (w *Worker) publish(id string, r Result) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	h := &w.handoffs
	h.results[id] = heldResult{r: r, at: now}
	h.order = append(h.order, heldID{id: id, at: now})
	for _, ch := range h.waiters[id] {
		ch <- r // buffered, one send per channel
	}
	delete(h.waiters, id)
	h.expire(now)
}

// expire forgets results older than the TTL, and the oldest beyond max.
func (h *handoffs) expire(now time.Time) {
	drop := 0
	for drop < len(h.order) {
		o := h.order[drop]
		if now.Sub(o.at) < h.ttl && len(h.results) <= h.max {
			break
		}
		if cur, ok := h.results[o.id]; ok && !cur.at.After(o.at) {
			delete(h.results, o.id)
		}
		drop++
	}
	h.order = h.order[drop:]
}

// failWaiters releases every waiting POS request without an answer; the
// entries' states are left as they are (State is empty).
func (h *handoffs) failWaiters() {
	for id, chans := range h.waiters {
		for _, ch := range chans {
			ch <- Result{}
		}
		delete(h.waiters, id)
	}
}

// Await waits until the current attempt for queueID ends, or ctx ends. It
// returns the upstream's answer and true when the upstream gave a final
// answer; false at once when the upstream is known down or paused, or when
// the last attempt failed without an answer, so that the API can answer 202
// without waiting.
func (w *Worker) Await(ctx context.Context, queueID string) (Result, bool) {
	w.mu.Lock()
	if held, ok := w.handoffs.results[queueID]; ok {
		w.mu.Unlock()
		return held.r, held.r.Answered
	}
	if w.link.down || w.now().Before(w.link.pauseUntil) {
		w.mu.Unlock()
		return Result{}, false
	}
	ch := make(chan Result, 1)
	w.handoffs.waiters[queueID] = append(w.handoffs.waiters[queueID], ch)
	w.mu.Unlock()

	select {
	case r := <-ch:
		return r, r.Answered
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		chans := w.handoffs.waiters[queueID]
		for i, c := range chans {
			if c == ch {
				w.handoffs.waiters[queueID] = append(chans[:i], chans[i+1:]...)
				break
			}
		}
		if len(w.handoffs.waiters[queueID]) == 0 {
			delete(w.handoffs.waiters, queueID)
		}
		return Result{}, false
	}
}

// Recent returns the upstream's final answer for queueID while it is still
// held in memory (Config.ResultTTL), so that a replayed request can print
// the lottery number and QR data.
func (w *Worker) Recent(queueID string) (Result, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	held, ok := w.handoffs.results[queueID]
	if !ok || !held.r.Answered || w.now().Sub(held.at) >= w.handoffs.ttl {
		return Result{}, false
	}
	return held.r, true
}
