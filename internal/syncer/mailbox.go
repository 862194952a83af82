package syncer

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/metrics"
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
	// JSON says that Body was read as JSON (a create's SUCCESS or
	// PAYMENT): whoever hands it on need not check it again.
	JSON bool
}

// AnswerStatus is what the late-answer route may say of an entry's answer
// (see Mailbox.Take).
type AnswerStatus int

const (
	// AnswerUnknown: nothing is held and nothing is being sent: the answer,
	// if there was one, was never held by this run, expired or was pushed
	// out by the bounds. The entry's state on disk tells which.
	AnswerUnknown AnswerStatus = iota
	// AnswerPending: the entry is being sent, or its last attempt ended
	// without an answer: ask again later.
	AnswerPending
	// AnswerGiven: Take returned the answer; it will not return it again.
	AnswerGiven
	// AnswerAlreadyGiven: the answer was given to a POS before, by the
	// late-answer route or in the answer to its own request.
	AnswerAlreadyGiven
)

// MailboxConfig bounds a Mailbox. Every zero value means the default given.
type MailboxConfig struct {
	// ResultTTL is how long an answer stays in memory once a POS has
	// received it (for replays), and how long a failed attempt's marker
	// stays; zero: 5m.
	ResultTTL time.Duration
	// AnswerTTL is how long an answer no POS has received yet stays in
	// memory for the late-answer route (accept.answer_ttl); zero: 24h.
	AnswerTTL time.Duration
	// MaxResults and MaxResultBytes bound the answers held by count and by
	// bytes; the oldest go first. Zero: 10000 and 16 MiB.
	MaxResults     int
	MaxResultBytes int64
	// Now is the clock of the lifetimes; nil means time.Now, whose
	// monotonic reading no change of the wall clock moves.
	Now func() time.Time
}

func (c MailboxConfig) withDefaults() MailboxConfig {
	if c.MaxResults <= 0 {
		c.MaxResults = 10000
	}
	if c.MaxResultBytes <= 0 {
		c.MaxResultBytes = 16 << 20
	}
	if c.ResultTTL <= 0 {
		c.ResultTTL = 5 * time.Minute
	}
	if c.AnswerTTL <= 0 {
		c.AnswerTTL = 24 * time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Mailbox hands the upstream's answers from the worker that sends a
// receipt to the POS request that waits for it, to a replay of that
// request, and to the late-answer route. The worker puts answers in; the
// API takes them out. Answers (lottery number and QR data included) live
// in memory only, never on disk or in a log, bounded by count, bytes and
// time (MailboxConfig). All methods are safe for concurrent use.
//
// Lifetimes: a marker of an attempt that ended without an answer lives
// ResultTTL, so a replay does not wait again. An answer nobody has received
// yet lives AnswerTTL, waiting for the late-answer route or a replay. Once
// it has been given to a POS (Delivered, Take, or a waiting Await), it
// lives at most ResultTTL more, so that a POS that lost that answer on the
// wire can send the same request again and print it.
type Mailbox struct {
	log *zap.Logger
	m   *metrics.Metrics
	now func() time.Time

	mu sync.Mutex
	a  answers
	// stalledUntil and down are the worker's word that no answer is coming
	// soon (the upstream is down, or asked for a pause): Await returns at
	// once instead of waiting.
	down         bool
	stalledUntil time.Time
}

// NewMailbox returns an empty mailbox. m may be nil.
func NewMailbox(cfg MailboxConfig, log *zap.Logger, m *metrics.Metrics) *Mailbox {
	cfg = cfg.withDefaults()
	return &Mailbox{log: log.Named("answers"), m: m, now: cfg.Now, a: newAnswers(cfg)}
}

// Held reports how many answers (and markers) are held and their size as
// counted against MailboxConfig.MaxResultBytes.
func (mb *Mailbox) Held() (int, int64) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return len(mb.a.held), mb.a.bytes
}

// Await waits until the current attempt for queueID ends, or ctx ends. It
// returns the upstream's answer and true when the upstream gave a final
// answer; false at once when the upstream is known down or paused, or when
// the last attempt failed without an answer, so that the API can answer 202
// without waiting. A caller that gives the answer to a POS reports it with
// Delivered.
func (mb *Mailbox) Await(ctx context.Context, queueID string) (Result, bool) {
	mb.mu.Lock()
	now := mb.now()
	if held, ok := mb.a.get(queueID, now); ok {
		mb.mu.Unlock()
		return held.r, held.r.Answered
	}
	if mb.down || now.Before(mb.stalledUntil) {
		mb.mu.Unlock()
		return Result{}, false
	}
	return mb.waitLocked(ctx, queueID)
}

// waitLocked waits, mb.mu held and released, for the end of the attempt
// for queueID, or for ctx's end.
func (mb *Mailbox) waitLocked(ctx context.Context, queueID string) (Result, bool) {
	ch := make(chan Result, 1)
	mb.a.waiters[queueID] = append(mb.a.waiters[queueID], ch)
	mb.mu.Unlock()

	select {
	case r := <-ch:
		return r, r.Answered
	case <-ctx.Done():
		mb.mu.Lock()
		defer mb.mu.Unlock()
		select {
		case r := <-ch:
			// Published as ctx ended: the answer must not be lost.
			return r, r.Answered
		default:
		}
		mb.a.unwait(queueID, ch)
		return Result{}, false
	}
}

// Settled is Recent for an entry whose outcome is on disk already: an
// attempt commits its outcome before it publishes its answer, so a replay
// that reads the outcome in between waits (until ctx ends) for the answer
// the attempt is about to publish, instead of being told it is gone.
func (mb *Mailbox) Settled(ctx context.Context, queueID string) (Result, bool) {
	mb.mu.Lock()
	if held, ok := mb.a.get(queueID, mb.now()); ok {
		mb.mu.Unlock()
		return held.r, held.r.Answered
	}
	if _, ok := mb.a.inflight[queueID]; !ok {
		mb.mu.Unlock()
		return Result{}, false
	}
	return mb.waitLocked(ctx, queueID)
}

// Recent returns the upstream's final answer for queueID while it is still
// held, so that a replayed request can print the lottery number and QR
// data. The caller that gives it to a POS reports it with Delivered.
func (mb *Mailbox) Recent(queueID string) (Result, bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	held, ok := mb.a.get(queueID, mb.now())
	if !ok || !held.r.Answered {
		return Result{}, false
	}
	return held.r, true
}

// Delivered records that queueID's answer was given to a POS in the answer
// to its request: the late-answer route no longer gives it, and it stays
// held for MailboxConfig.ResultTTL at most, for replays.
func (mb *Mailbox) Delivered(queueID string) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	now := mb.now()
	if held, ok := mb.a.get(queueID, now); ok && held.r.Answered {
		mb.a.deliver(held, now)
	}
}

// Take gives queueID's answer to the late-answer route, once: the first
// call after the answer arrives returns it with AnswerGiven, and marks it
// delivered; later calls, and calls after the answer was given in the
// answer to a request, return AnswerAlreadyGiven.
func (mb *Mailbox) Take(queueID string) (Result, AnswerStatus) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	now := mb.now()
	if _, ok := mb.a.inflight[queueID]; ok {
		return Result{}, AnswerPending
	}
	held, ok := mb.a.get(queueID, now)
	switch {
	case !ok:
		return Result{}, AnswerUnknown
	case !held.r.Answered:
		return Result{State: held.r.State}, AnswerPending
	case held.delivered:
		return Result{State: held.r.State}, AnswerAlreadyGiven
	}
	mb.a.deliver(held, now)
	return held.r, AnswerGiven
}

// Mark marks the attempts begun so far, for Forget.
func (mb *Mailbox) Mark() uint64 {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.a.seq
}

// Forget drops the answer of every attempt for queueID that began no later
// than mark (taken before the entry was put back in the queue), held now
// or published later: an operator's retry makes an earlier answer stale,
// and neither a replay nor the late-answer route may give a refusal or
// PAYMENT the retry may turn into an issued receipt. An attempt's outcome
// is committed before its answer is published, so a retry can come
// between the two; that answer is not kept when it comes. The answer of
// the retry's own attempt, which begins after mark, is kept.
func (mb *Mailbox) Forget(queueID string, mark uint64) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if h, ok := mb.a.held[queueID]; ok && h.began <= mark {
		mb.a.remove(queueID)
		mb.a.compact()
	}
	if began, ok := mb.a.inflight[queueID]; ok && began <= mark {
		mb.a.forgot[queueID] = mark
	}
}

// sending records that an attempt for id begins and returns its mark for
// publish, which ends it. Until then the late-answer route says "pending"
// even when the outcome is already on disk.
func (mb *Mailbox) sending(id string) uint64 {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.a.begin(id)
}

// awaited reports whether a request waits for id's answer now.
func (mb *Mailbox) awaited(id string) bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return len(mb.a.waiters[id]) > 0
}

// publish keeps r, the answer of the attempt for id that sending began at
// began, and hands it to everyone waiting for id.
func (mb *Mailbox) publish(id string, began uint64, r Result) {
	mb.mu.Lock()
	now := mb.now()
	a := &mb.a
	dropped := a.put(id, began, r, now)
	if held, ok := a.held[id]; ok && r.Answered && len(a.waiters[id]) > 0 {
		// A waiting request gets it now (Await never drops a result sent
		// to it), so the late-answer route must not give it as well.
		a.deliver(held, now)
	}
	for _, ch := range a.waiters[id] {
		ch <- r // buffered, one send per channel
	}
	delete(a.waiters, id)
	mb.mu.Unlock()
	for _, d := range dropped {
		mb.m.AnswerDropped()
		// Only the id: the answer itself is never logged.
		mb.log.Warn("an answer nobody has fetched yet was dropped from memory to stay within its bounds; the late-answer route will say 410",
			zap.String("queueId", d))
	}
}

// stall tells the mailbox whether an answer may come soon: while the
// upstream is down, or until a pause it asked for ends, Await does not
// wait. Stalling releases every waiting request without an answer.
func (mb *Mailbox) stall(down bool, until time.Time) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	mb.down, mb.stalledUntil = down, until
	if down || mb.now().Before(until) {
		mb.a.failWaiters()
	}
}

// expire forgets everything past its time.
func (mb *Mailbox) expire() {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	mb.a.expire(mb.now())
}
