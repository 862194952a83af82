package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
)

// attemptResult is everything one attempt decided.
type attemptResult struct {
	attempt       queue.Attempt
	next          queue.State
	outcome       *queue.Outcome
	nextAttemptAt time.Time
	handoff       Result
	began         uint64 // the attempt's mark in the mailbox (Mailbox.sending)
	awaited       bool   // a request waits for the answer (sendLoop), whether or not it awaits it yet
	issued        bool   // the tax service issued the receipt: Limits.ReceiptIssued once the answer is handed over
	retryAfter    time.Duration
	err           error
}

// sendLoop carries out an attempt on e, which Claim has marked sending, and
// while the upstream answers goes straight on to the next due entry,
// claimed in the same commit that records the outcome: one commit per
// receipt, and no idle gap between a send and the next. It holds one slot
// throughout and frees it when it stops. keepGoing false (the outage
// probe) makes exactly one attempt. loopCtx ending stops it after the
// attempt in flight; sendCtx bounds the attempts themselves.
//
// afterFirst, when not nil, runs once the first attempt has returned:
// the entry was a sale whose accept carried its claim (Slot.Send), and
// its request is taken to wait for the answer even before it calls Await.
func (w *Worker) sendLoop(loopCtx, sendCtx context.Context, e queue.Entry, keepGoing bool, afterFirst func()) {
	defer func() {
		<-w.slots
		w.signal()
	}()
	for {
		res := w.attempt(sendCtx, e, true)
		res.awaited = afterFirst != nil
		if afterFirst != nil {
			afterFirst()
			afterFirst = nil
		}
		w.noteLink(res)
		next, ok := w.record(sendCtx, e, res, w.claimAfter(loopCtx, res, keepGoing))
		w.countIssued(e, res)
		if !ok {
			return
		}
		TracePhase("claimed", next.QueueID)
		e = next
	}
}

// claimAfter is how many entries the outcome's record claims for the
// slot to send next: one while the upstream answers and the loop goes on.
func (w *Worker) claimAfter(loopCtx context.Context, res attemptResult, keepGoing bool) int {
	if keepGoing && res.handoff.Answered && loopCtx.Err() == nil && !w.isDown() && w.pausedFor() <= 0 {
		return 1
	}
	return 0
}

// countIssued counts a receipt the tax service issued, after its answer
// went: the count reads the body for its type, which a waiting POS need
// not wait for.
func (w *Worker) countIssued(e queue.Entry, res attemptResult) {
	if res.issued {
		w.cfg.Limits.ReceiptIssued(isB2C(e.Body))
	}
}

// attempt sends e once and decides what its answer means. stored says
// that e's body was read back from the log or the database, and is
// checked against its hash before it is sent (checkBody); a sale sent by
// the request that accepted it carries the bytes that hash was taken of.
func (w *Worker) attempt(ctx context.Context, e queue.Entry, stored bool) attemptResult {
	TracePhase("send", e.QueueID)
	crashPoint("sending") // durably sending, the request not written
	began := w.answers.sending(e.QueueID)
	res := w.send(ctx, e, stored)
	TracePhase("answer", e.QueueID)
	if res.handoff.Answered {
		crashPoint("answered") // the tax service answered, nothing recorded
	}
	res.began = began
	return res
}

// send is attempt's request and the meaning of its answer.
func (w *Worker) send(ctx context.Context, e queue.Entry, stored bool) attemptResult {
	// Never in parallel with receiptd's own sendData (posapi).
	end, err := w.cfg.Limits.BeginSend(ctx)
	if err != nil {
		res := attemptResult{next: queue.StateQueued, err: err}
		if e.Kind == queue.KindDelete {
			res.next = queue.StateDeleteQueued
		}
		res.attempt.At, res.attempt.Result, res.attempt.Error = w.wall(), queue.ResultNotSent, "not sent: "+err.Error()
		return res
	}
	defer end()
	start, at := w.now(), w.wall()
	var res attemptResult
	if e.Kind == queue.KindDelete {
		res = w.sendDelete(ctx, e)
	} else {
		res = w.sendReceipt(ctx, e, stored)
	}
	res.attempt.At = at
	res.attempt.Duration = w.now().Sub(start)
	return res
}

// sendReceipt sends a create request and maps its answer to a state.
func (w *Worker) sendReceipt(ctx context.Context, e queue.Entry, stored bool) attemptResult {
	if stored {
		if res, bad := checkBody(e); bad {
			return res
		}
	}
	r, err := w.up.CreateReceipt(ctx, e.Body)
	if err == nil {
		res := attemptResult{next: queue.StateSent, outcome: outcomeOf(r), issued: true}
		res.attempt.Result = queue.ResultSuccess
		if r.Status == "PAYMENT" {
			res.next, res.attempt.Result = queue.StatePayment, queue.ResultPayment
		}
		res.attempt.HTTPStatus = r.HTTPStatus
		res.handoff = Result{Answered: true, StatusCode: r.HTTPStatus, Body: r.Body, JSON: true}
		return res
	}
	res := w.failed(e, err, queue.StateQueued)
	if res.attempt.Result == queue.ResultRejected && w.cfg.Limits.ReserveRefusal(ctx, isB2C(e.Body), res.outcome.Message) {
		return w.reserveWait(res, res.outcome.Message)
	}
	if res.attempt.Result == queue.ResultRejected {
		res.next = queue.StateRejected
		if r != nil {
			// Whatever identity the answer carries is kept too; status,
			// message and HTTP status stay as failed() made them.
			o := outcomeOf(r)
			o.Status, o.Message, o.HTTPStatus = res.outcome.Status, res.outcome.Message, res.outcome.HTTPStatus
			res.outcome = o
		}
	}
	if res.attempt.Result == queue.ResultAmbiguous {
		if n := e.Ambiguous + 1; n >= w.cfg.MaxAmbiguous {
			res.next, res.nextAttemptAt, res.outcome = queue.StateHeld, time.Time{}, queue.HeldOutcome(n)
		} else if w.cfg.OnAmbiguous == "hold" {
			res.next, res.nextAttemptAt = queue.StateHeld, time.Time{}
		}
	}
	return res
}

// damagedBody is the message of an entry held because its stored body no
// longer matches the hash taken when the POS's request was accepted.
const damagedBody = "not sent: the stored receipt no longer matches the fingerprint taken when it was accepted " +
	"(the database file was changed or damaged); receiptd holds it and never sends it as it is. " +
	"Check the sale with the POS and restore the database from a backup (receiptd restore FILE)"

// checkBody holds a receipt whose body does not match its stored hash,
// before anything is sent: what would reach the tax service is not what
// the POS sent. An entry without a hash (none is written without one) is
// not checked.
func checkBody(e queue.Entry) (attemptResult, bool) {
	if e.BodyHash == "" || receipt.Fingerprint(e.Body) == e.BodyHash {
		return attemptResult{}, false
	}
	res := attemptResult{next: queue.StateHeld, outcome: &queue.Outcome{Status: "ERROR", Message: damagedBody}}
	res.attempt.Result, res.attempt.Error = queue.ResultDamaged, damagedBody
	return res, true
}

// sendDelete sends a delete request and maps its answer to a state.
func (w *Worker) sendDelete(ctx context.Context, e queue.Entry) attemptResult {
	raw, err := w.up.DeleteReceipt(ctx, e.DeleteID, e.DeleteDate)
	if err == nil {
		res := attemptResult{next: queue.StateDeleted}
		res.attempt.Result, res.attempt.HTTPStatus = queue.ResultSuccess, raw.StatusCode
		res.outcome = &queue.Outcome{Status: "SUCCESS", ID: e.DeleteID, Date: e.DeleteDate, HTTPStatus: raw.StatusCode}
		res.handoff = Result{Answered: true, StatusCode: raw.StatusCode, Body: raw.Body}
		return res
	}
	res := w.failed(e, err, queue.StateDeleteQueued)
	if res.attempt.Result == queue.ResultRejected {
		res.next = queue.StateDeleteRejected
		var ce *client.Error
		if e.Ambiguous > 0 && errors.As(err, &ce) && notFoundAnswer(ce, e.DeleteID) {
			deletedEarlier(&res, e, ce)
		}
	}
	return res
}

// deletedEarlier finishes a delete as deleted although its answer was "not
// found": an earlier attempt may have reached the tax service (its answer
// was lost, or receiptd stopped mid-send), and the likeliest reason the
// receipt is gone is that this attempt deleted it. The attempt itself is
// still recorded as rejected, with what the tax service said.
func deletedEarlier(res *attemptResult, e queue.Entry, ce *client.Error) {
	msg := fmt.Sprintf("the tax service no longer knows receipt %s (HTTP %d: %s); "+
		"an earlier attempt whose answer was lost most likely deleted it", e.DeleteID, ce.StatusCode, ce.Message)
	res.next = queue.StateDeleted
	res.outcome = &queue.Outcome{Status: client.StatusSuccess, ID: e.DeleteID, Date: e.DeleteDate, Message: msg, HTTPStatus: ce.StatusCode}
	body, _ := json.Marshal(struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}{client.StatusSuccess, msg})
	res.handoff = Result{Answered: true, StatusCode: http.StatusOK, Body: body}
}

// failed maps a send error to an attempt result; retry is the state an
// entry returns to when it will be sent again.
func (w *Worker) failed(e queue.Entry, err error, retry queue.State) attemptResult {
	res := attemptResult{next: retry, err: err}
	res.attempt.Error = err.Error()
	var ce *client.Error
	if errors.As(err, &ce) {
		res.attempt.HTTPStatus = ce.StatusCode
	}
	n := len(e.Attempts) + 1
	class, ok := client.ClassOf(err)
	switch {
	case ok && class == client.Rejected:
		res.attempt.Result = queue.ResultRejected
		res.outcome = rejectedOutcome(ce)
		res.handoff = Result{Answered: true, StatusCode: ce.StatusCode, Body: ce.Body}
	case ok && class == client.NotSent:
		// The global backoff paces the next try; the entry keeps its place.
		res.attempt.Result = queue.ResultNotSent
	case ok && class == client.Transient:
		res.attempt.Result = queue.ResultTransient
		res.retryAfter = ce.RetryAfter
		res.nextAttemptAt = w.wall().Add(w.retryDelay(n, ce.RetryAfter))
	default:
		// Ambiguous, or an error the client could not classify: the request
		// may have been processed, so it counts as ambiguous.
		res.attempt.Result = queue.ResultAmbiguous
		res.nextAttemptAt = w.wall().Add(w.retryDelay(n, 0))
	}
	return res
}

// record writes the attempt's outcome, claiming up to claim more entries in
// the same commit, then hands the upstream's answer to a waiting POS. It
// returns the entry claimed, if any.
//
// Writing is retried with backoff until it succeeds or ctx ends (at the
// shutdown deadline): an outcome left unrecorded leaves the entry in
// sending, and after a restart it would count as ambiguous and be sent
// again, issuing a sale twice. The slot stays taken meanwhile.
func (w *Worker) record(ctx context.Context, e queue.Entry, res attemptResult, claim int) (queue.Entry, bool) {
	return w.recordCounted(ctx, w.counted(e, res), e, res, claim)
}

// recordCounted is record for an attempt counted already (log: its
// entry's logger).
func (w *Worker) recordCounted(ctx context.Context, log *zap.Logger, e queue.Entry, res attemptResult, claim int) (queue.Entry, bool) {
	published := false
	publish := func() { // once the outcome is recorded (Finishing.Recorded), before any claim
		w.publish(e, res)
		published = true
	}
	claimed, err := w.finish(ctx, log, e, res, claim, publish)
	if err != nil {
		if published {
			notFlushed(log, res, err)
			return queue.Entry{}, false
		}
		log.Error("could not record the outcome before shutdown; the entry will count as ambiguous after a restart",
			zap.String("result", string(res.attempt.Result)), zap.Error(err))
		w.answers.publish(e.QueueID, res.began, Result{State: queue.StateSending})
		return queue.Entry{}, false
	}
	logOutcome(log, res)
	if !published {
		publish()
	}
	if len(claimed) == 0 {
		return queue.Entry{}, false
	}
	return claimed[0], true
}

// counted counts an attempt in the metrics and returns the logger of its
// entry.
func (w *Worker) counted(e queue.Entry, res attemptResult) *zap.Logger {
	kind := string(e.Kind)
	w.m.SendAttempt(kind, string(res.attempt.Result), res.attempt.Duration)
	if res.attempt.Result == queue.ResultAmbiguous {
		w.m.Ambiguous()
	}
	return w.log.With(zap.String("queueId", e.QueueID), zap.String("kind", kind))
}

// publish hands an attempt's answer to the request waiting for it, once
// its outcome is recorded (Finishing.Recorded), before any claim.
func (w *Worker) publish(e queue.Entry, res attemptResult) {
	w.handOver(e, res)
	crashPoint("published") // the answer handed over, the outcome in the log only, its flush maybe running
}

// handOver is publish before its crash point: the request that sent the
// attempt itself (Slot.SendHere) writes the answer after it, and the
// crash point follows that.
func (w *Worker) handOver(e queue.Entry, res attemptResult) {
	TracePhase("recorded", e.QueueID)
	res.handoff.State = res.next
	crashPoint("recorded") // the outcome in the log's file (a commit's: durable), the answer not handed over
	w.answers.publish(e.QueueID, res.began, res.handoff)
	TracePhase("published", e.QueueID)
}

// notFlushed logs an outcome whose answer was handed over and whose
// flush failed: in the log's file, not flushed, the disk failed under it
// (the log refuses every write now; a shutdown waits for the flush). The
// tax service's answer stays the entry's answer.
func notFlushed(log *zap.Logger, res attemptResult, err error) {
	log.Error("the answer was handed over, but its outcome could not be flushed; if it is not in the log at the next start, the entry counts as ambiguous",
		zap.String("result", string(res.attempt.Result)), zap.Error(err))
}

// logOutcome logs what an attempt's recorded outcome means, where it is
// more than a sale sent.
func logOutcome(log *zap.Logger, res attemptResult) {
	switch res.next {
	case queue.StateRejected, queue.StateDeleteRejected:
		log.Warn("rejected by the tax service", zap.Int("httpStatus", res.attempt.HTTPStatus), zap.String("message", res.outcome.Message))
	case queue.StateHeld:
		if res.attempt.Result == queue.ResultDamaged {
			log.Error("stored receipt does not match its fingerprint: held, not sent", zap.String("advice", damagedBody))
			break
		}
		log.Warn("ambiguous attempt: held for an operator", zap.Error(res.err))
	case queue.StatePayment:
		log.Info("payment incomplete: entry in state payment")
	case queue.StateDeleted:
		if res.attempt.Result == queue.ResultRejected {
			log.Info("delete finished as deleted: the tax service no longer knows the receipt after an attempt whose answer was lost",
				zap.Int("httpStatus", res.attempt.HTTPStatus), zap.String("message", res.outcome.Message))
		}
	}
}

// finish writes an attempt's outcome until it is durable or ctx ends; the
// last try after ctx ends still gets its own few seconds. Only the first
// try claims: a claim may index up to 1,000 queued receipts, so on a nearly
// full disk it can be the part that does not fit, and the outcome must not
// wait for it. The drain loop claims once the slot is free.
func (w *Worker) finish(ctx context.Context, log *zap.Logger, e queue.Entry, res attemptResult, claim int, recorded func()) ([]queue.Entry, error) {
	wait := w.newBackoff()
	for try := 0; ; try, claim = try+1, 0 {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, claimed, err := w.q.FinishAndClaim(wctx, w.finishing(e, res, recorded), claim, w.wall())
		cancel()
		if err == nil {
			if try > 0 {
				log.Info("outcome recorded after retrying", zap.Int("tries", try+1))
			}
			return claimed, nil
		}
		if try == 0 {
			log.Warn("cannot record the outcome yet (disk full?); retrying", zap.Error(err))
		}
		if !clock.Sleep(ctx, wait.NextBackOff()) {
			return nil, err
		}
	}
}

// finishing is the record of an attempt's outcome; recorded is called
// once it is recorded.
func (w *Worker) finishing(e queue.Entry, res attemptResult, recorded func()) queue.Finishing {
	return queue.Finishing{QueueID: e.QueueID, Attempt: res.attempt, Next: res.next, Outcome: res.outcome,
		NextAttemptAt: res.nextAttemptAt, Recorded: recorded, Awaited: res.awaited || w.answers.awaited(e.QueueID)}
}

// noteLink updates what the worker knows of the upstream from one attempt.
func (w *Worker) noteLink(res attemptResult) {
	switch {
	case res.attempt.Result == queue.ResultDamaged:
		// Nothing was sent: the upstream's state is unknown from this.
	case res.attempt.Result == queue.ResultSuccess, res.attempt.Result == queue.ResultPayment,
		res.attempt.Result == queue.ResultRejected, res.attempt.Result == queue.ResultNoLotteries:
		w.markUp(res.attempt.Result != queue.ResultRejected)
	case res.attempt.HTTPStatus == http.StatusTooManyRequests:
		w.throttled(res.retryAfter, res.err)
	case res.attempt.Result == queue.ResultNotSent:
		w.markDown(res.err)
	default:
		w.mu.Lock()
		w.link.failures++
		w.link.setError(res.attempt.Error, w.now())
		tooMany := w.link.failures >= w.cfg.DownAfter
		w.mu.Unlock()
		if tooMany {
			w.markDown(res.err)
		}
	}
}

// markUp records an answer from the upstream; success says whether it
// accepted the request (it counts as the last success).
func (w *Worker) markUp(success bool) {
	w.answered(success, false)
}

// throttled records a 429: an answer, so the upstream is up, asking that
// nothing be sent for retryAfter. Without a Retry-After the pause is a
// backoff step that grows with each 429 in a row, so an upstream that
// only says "too many" is not sent one request per queued entry.
func (w *Worker) throttled(retryAfter time.Duration, err error) {
	w.mu.Lock()
	w.link.tooMany++
	if retryAfter <= 0 {
		retryAfter = w.retryDelay(w.link.tooMany, 0)
	}
	until := w.now().Add(retryAfter)
	first := w.link.tooMany == 1 // logged once per run of 429s, not per answer
	if until.After(w.link.pauseUntil) {
		w.link.pauseUntil = until
	}
	if err != nil {
		w.link.setError(err.Error(), w.now())
	}
	// As while down: nothing will answer a waiting POS before the pause
	// ends, so it gets its 202 now.
	w.answers.stall(w.link.down, w.link.pauseUntil)
	w.mu.Unlock()
	if first {
		w.log.Info("the tax service asks for a pause (429); sending nothing until it ends", zap.Duration("pause", retryAfter))
	}
	w.answered(false, true)
}

// answered records an answer: the upstream is up, whatever it said. A
// 429 (tooMany) keeps the count of 429s in a row; any other answer ends it.
func (w *Worker) answered(success, tooMany bool) {
	now := w.now()
	w.mu.Lock()
	wasDown, since := w.link.down, w.link.since
	w.link.failures = 0
	if !tooMany {
		w.link.tooMany = 0
	}
	if success {
		w.link.lastSuccess = now
	}
	if wasDown {
		w.link.down, w.link.since = false, now
		w.answers.stall(false, w.link.pauseUntil)
	}
	w.mu.Unlock()
	if wasDown {
		w.m.SetUpstreamUp(true)
		msg := "tax service reachable again; draining the queue"
		if tooMany {
			msg = "tax service reachable again; draining the queue once its pause ends"
		}
		w.log.Info(msg, zap.Duration("downFor", now.Sub(since)))
		w.signal()
	}
}

// markDown records that the upstream cannot be reached. Waiting POS
// requests are released at once: nothing will answer them soon.
func (w *Worker) markDown(err error) {
	now := w.now()
	w.mu.Lock()
	wasDown := w.link.down
	if err != nil {
		w.link.setError(err.Error(), now)
	}
	if !wasDown {
		w.link.down, w.link.since = true, now
	}
	w.answers.stall(true, w.link.pauseUntil)
	w.mu.Unlock()
	if !wasDown {
		w.m.SetUpstreamUp(false)
		w.log.Warn("tax service unreachable; receipts stay queued, probing with backoff", zap.Error(err))
	}
}

func (w *Worker) isDown() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.link.down
}

// pausedFor is how long a 429 still forbids sending.
func (w *Worker) pausedFor() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.link.pauseUntil.Sub(w.now())
}
