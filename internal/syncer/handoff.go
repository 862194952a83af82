package syncer

import (
	"context"

	"go.uber.org/zap"

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

// AnswerStatus is what the late-answer route may say of an entry's answer
// (see TakeAnswer).
type AnswerStatus int

const (
	// AnswerUnknown: nothing is held and nothing is being sent: the answer,
	// if there was one, was never held by this run, expired or was pushed
	// out by the bounds. The entry's state on disk tells which.
	AnswerUnknown AnswerStatus = iota
	// AnswerPending: the entry is being sent, or its last attempt ended
	// without an answer: ask again later.
	AnswerPending
	// AnswerGiven: TakeAnswer returned the answer; it will not return it
	// again.
	AnswerGiven
	// AnswerAlreadyGiven: the answer was given to a POS before, by the
	// late-answer route or in the answer to its own request.
	AnswerAlreadyGiven
)

// sending records that an attempt for id has begun; publish ends it. Until
// then the late-answer route says "pending" even when the outcome is
// already on disk.
func (w *Worker) sending(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answers.inflight[id] = struct{}{}
}

// publish keeps r for id and hands it to everyone waiting for id.
func (w *Worker) publish(id string, r Result) {
	now := w.now()
	w.mu.Lock()
	a := &w.answers
	dropped := a.put(id, r, now)
	if held, ok := a.held[id]; ok && r.Answered && len(a.waiters[id]) > 0 {
		// A waiting request gets it now (Await never drops a result sent
		// to it), so the late-answer route must not give it as well.
		a.deliver(held, now)
	}
	for _, ch := range a.waiters[id] {
		ch <- r // buffered, one send per channel
	}
	delete(a.waiters, id)
	w.mu.Unlock()
	for _, d := range dropped {
		w.m.AnswerDropped()
		// Only the id: the answer itself is never logged.
		w.log.Warn("an answer nobody has fetched yet was dropped from memory to stay within its bounds; the late-answer route will say 410",
			zap.String("queueId", d))
	}
}

// HeldAnswers reports how many answers (and markers) are held in memory
// and their size as counted against Config.MaxResultBytes.
func (w *Worker) HeldAnswers() (int, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.answers.held), w.answers.bytes
}

// Await waits until the current attempt for queueID ends, or ctx ends. It
// returns the upstream's answer and true when the upstream gave a final
// answer; false at once when the upstream is known down or paused, or when
// the last attempt failed without an answer, so that the API can answer 202
// without waiting. A caller that gives the answer to a POS reports it with
// Delivered.
func (w *Worker) Await(ctx context.Context, queueID string) (Result, bool) {
	w.mu.Lock()
	if held, ok := w.answers.get(queueID, w.now()); ok {
		w.mu.Unlock()
		return held.r, held.r.Answered
	}
	if w.link.down || w.now().Before(w.link.pauseUntil) {
		w.mu.Unlock()
		return Result{}, false
	}
	ch := make(chan Result, 1)
	w.answers.waiters[queueID] = append(w.answers.waiters[queueID], ch)
	w.mu.Unlock()

	select {
	case r := <-ch:
		return r, r.Answered
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		select {
		case r := <-ch:
			// Published as ctx ended: the answer must not be lost.
			return r, r.Answered
		default:
		}
		chans := w.answers.waiters[queueID]
		for i, c := range chans {
			if c == ch {
				w.answers.waiters[queueID] = append(chans[:i], chans[i+1:]...)
				break
			}
		}
		if len(w.answers.waiters[queueID]) == 0 {
			delete(w.answers.waiters, queueID)
		}
		return Result{}, false
	}
}

// Recent returns the upstream's final answer for queueID while it is still
// held in memory, so that a replayed request can print the lottery number
// and QR data. The caller that gives it to a POS reports it with Delivered.
func (w *Worker) Recent(queueID string) (Result, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	held, ok := w.answers.get(queueID, w.now())
	if !ok || !held.r.Answered {
		return Result{}, false
	}
	return held.r, true
}

// Delivered records that queueID's answer was given to a POS in the answer
// to its request: the late-answer route no longer gives it, and it stays in
// memory for Config.ResultTTL at most, for replays.
func (w *Worker) Delivered(queueID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if held, ok := w.answers.get(queueID, w.now()); ok && held.r.Answered {
		w.answers.deliver(held, w.now())
	}
}

// TakeAnswer gives queueID's answer to the late-answer route, once: the
// first call after the answer arrives returns it with AnswerGiven, and
// marks it delivered; later calls, and calls after the answer was given in
// the answer to a request, return AnswerAlreadyGiven.
func (w *Worker) TakeAnswer(queueID string) (Result, AnswerStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if _, ok := w.answers.inflight[queueID]; ok {
		return Result{}, AnswerPending
	}
	held, ok := w.answers.get(queueID, now)
	switch {
	case !ok:
		return Result{}, AnswerUnknown
	case !held.r.Answered:
		return Result{State: held.r.State}, AnswerPending
	case held.delivered:
		return Result{State: held.r.State}, AnswerAlreadyGiven
	}
	w.answers.deliver(held, now)
	return held.r, AnswerGiven
}

// AnswerMark marks the answers published so far, for Forget.
func (w *Worker) AnswerMark() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answers.seq
}

// Forget drops what is held for queueID if it was published no later than
// mark (taken before the entry was put back in the queue): an operator's
// retry makes an earlier answer stale, and neither a replay nor the
// late-answer route may give a refusal or PAYMENT the retry may turn into
// an issued receipt. An answer of the retry's own attempt, published after
// mark, is kept.
func (w *Worker) Forget(queueID string, mark uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h, ok := w.answers.held[queueID]; ok && h.seq <= mark {
		w.answers.remove(queueID)
		w.answers.compact()
	}
}
