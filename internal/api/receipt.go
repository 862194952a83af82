package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/logging"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/syncer"
)

// clientKeyPrefix keeps Idempotency-Key values apart from the keys
// receipt.DefaultKey derives, whatever a POS puts in the header.
const clientKeyPrefix = "key:"

// MidnightGrace: a create without an Idempotency-Key in the first
// MidnightGrace after midnight is a repeat of the same body accepted under
// the previous day's derived key in the last MidnightGrace before it.
const MidnightGrace = 15 * time.Minute

// startOfDay is the first instant of t's calendar day in loc (time.Local
// when nil): midnight, or, on a day whose midnight a clock change skips,
// the moment the day begins.
func startOfDay(t time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.Local
	}
	y, m, d := t.In(loc).Date()
	start := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if start.Day() != d {
		// time.Date normalised the missing midnight into the day before
		// (zones behind UTC); the day begins when that zone period ends.
		_, start = start.ZoneBounds()
	}
	return start
}

// accepted is the body of a 202 (and of a local 200 such as a cancel).
type accepted struct {
	QueueID string         `json:"queueId"`
	State   queue.State    `json:"state"`
	Message string         `json:"message"`
	Outcome *queue.Outcome `json:"outcome,omitempty"`
}

func (s *Server) createReceipt(w http.ResponseWriter, r *http.Request) {
	syncer.TracePhase("request", "")
	if s.storeBroken(w, "create") {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	c, err := s.o.Rules.ParseCreate(body)
	if err != nil {
		s.fail(w, "create", err)
		return
	}
	now := s.o.Now()
	nr := queue.NewReceipt{Body: body, BodyHash: c.Fingerprint, BodyParsed: true,
		MerchantTin: c.MerchantTin, PosNo: c.PosNo, BillIDSuffix: c.BillIDSuffix, Now: now}
	var problem string
	if nr.IdemKey, problem = s.idempotencyKey(r, c, now); problem != "" {
		writeFieldError(w, http.StatusBadRequest, HeaderIdempotencyKey, problem)
		return
	}
	if strings.HasPrefix(nr.IdemKey, receipt.DefaultKeyPrefix) {
		nr.EarlierKey, nr.EarlierSince = s.neighbourDayKey(c, now)
	}
	// While the tax service answers and a send slot is free, the accept
	// carries the claim: the record says sending, and the slot sends it
	// as soon as it is durable.
	var slot *syncer.Slot
	if s.d.Worker != nil {
		slot = s.d.Worker.TakeSlot()
	}
	nr.Sending = slot != nil
	e, replayed, err := s.d.Queue.Enqueue(r.Context(), nr)
	if err == nil {
		syncer.TracePhase("enqueued", e.QueueID)
	}
	sent := false
	var here inline
	if slot != nil {
		if sent = err == nil && !replayed && e.State == queue.StateSending; sent {
			here = s.send(w, r, slot, e)
		} else {
			slot.Release()
		}
	}
	if err != nil {
		s.fail(w, "create", err)
		return
	}
	s.d.Metrics.ReceiptAccepted(replayed)
	// One line per receipt at debug level only: at info it cost about a
	// tenth of the daemon's CPU per receipt under load; the counts are in
	// receiptd_receipts_accepted_total. Check first, so that the fields
	// (and the masking) cost nothing when debug is off.
	if ce := s.log.Check(zap.DebugLevel, "receipt accepted"); ce != nil {
		ce.Write(zap.String("queueId", e.QueueID), zap.Bool("replayed", replayed),
			zap.String("merchantTin", c.MerchantTin), zap.String("posNo", c.PosNo), zap.String("billIdSuffix", c.BillIDSuffix),
			logging.CustomerTin(c.CustomerTin), logging.ConsumerNo(c.ConsumerNo))
	}
	if s.d.NoteTIN != nil {
		for _, tin := range c.TINs {
			s.d.NoteTIN(tin)
		}
	}
	if here.answered {
		return
	}
	w.Header().Set(HeaderQueueID, e.QueueID)
	if replayed {
		w.Header().Set(HeaderReplayed, "true")
		s.answerReplay(w, r, e)
		return
	}
	wait := s.waitFor(w, r)
	if !here.deadline.IsZero() {
		// What is left of the wait; its answer is handed over by now
		// unless its outcome could not be written to the log.
		wait = max(time.Until(here.deadline), time.Nanosecond)
	}
	s.answerAfterWaitFor(w, r, e, sent, wait)
}

// inline is what send did with a sale's attempt: answered the request
// (with the tax service's answer, or 202 when the wait ended first), or
// made the attempt without an answer to give by deadline (zero: left the
// attempt to a goroutine of its own).
type inline struct {
	deadline time.Time
	answered bool
}

// send starts the attempt on a new sale whose accept carried its claim.
// A request that waits for the answer makes it itself (Slot.SendHere):
// no goroutine stands between the accept, the tax service and the answer.
// If the wait ends first (a slow tax service) or a Serve stops, the
// request is answered 202 at once from a timer's goroutine, with
// Connection: close, and its connection closed after the answer (this
// goroutine goes on sending, so the connection could not carry the POS's
// next request). A request whose POS
// has gone is not answered, and its answer stays the late-answer route's.
// Either way send reports answered, and the handler writes nothing more.
// A request that does not wait leaves the attempt to a goroutine of its
// own (Slot.Send).
func (s *Server) send(w http.ResponseWriter, r *http.Request, slot *syncer.Slot, e queue.Entry) inline {
	wait := s.waitFor(w, r)
	if wait <= 0 || s.d.Answers == nil {
		slot.Send(e)
		return inline{}
	}
	w.Header().Set(HeaderQueueID, e.QueueID)
	deadline := time.Now().Add(wait)
	var taken atomic.Bool // the answer is the timer's, or this goroutine's
	early := make(chan struct{})
	answerEarly := func() {
		if !taken.CompareAndSwap(false, true) {
			return
		}
		defer close(early)
		if r.Context().Err() != nil {
			return // the POS has gone
		}
		w.Header().Set("Connection", "close")
		s.answerAfterWaitFor(w, r, e, true, 0)
		// Out now, not when the send ends, and the connection closed
		// after it: it could carry nothing more, and a stop need not
		// wait for it.
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		if conn, buf, err := rc.Hijack(); err == nil {
			_ = buf.Flush()
			_ = conn.Close()
		}
	}
	t := time.AfterFunc(wait, answerEarly)
	stopQuit := context.AfterFunc(s.quit, answerEarly)
	stopGone := context.AfterFunc(r.Context(), answerEarly)
	res, done := slot.SendHere(e)
	defer done()
	t.Stop()
	stopQuit()
	stopGone()
	if !taken.CompareAndSwap(false, true) {
		<-early
		return inline{answered: true}
	}
	if !res.Answered {
		return inline{deadline: deadline}
	}
	syncer.TracePhase("awaited", e.QueueID)
	s.writeAnswer(w, e.QueueID, res)
	// Out now: the outcome's goroutine and the accept's bookkeeping
	// follow the answer, not precede it.
	_ = http.NewResponseController(w).Flush()
	syncer.TracePhase("answered", e.QueueID)
	return inline{answered: true}
}

func (s *Server) deleteReceipt(w http.ResponseWriter, r *http.Request) {
	if s.storeBroken(w, "delete") {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	d, err := receipt.ParseDelete(body)
	if err != nil {
		s.fail(w, "delete", err)
		return
	}
	e, action, err := s.d.Queue.RequestDelete(r.Context(), d.ID, d.Date, s.o.Now())
	if err != nil {
		s.fail(w, "delete", err)
		return
	}
	s.log.Info("delete requested", zap.String("id", d.ID), zap.String("queueId", e.QueueID), zap.String("action", string(action)))
	w.Header().Set(HeaderQueueID, e.QueueID)
	switch {
	case action == queue.DeleteCancelled:
		writeJSON(w, http.StatusOK, accepted{QueueID: e.QueueID, State: e.State,
			Message: "cancelled before it reached the tax service: it will never be sent"})
	case e.State == queue.StateDeleteQueued || e.State == queue.StateSending:
		s.answerAfterWait(w, r, e, false)
	default:
		s.answerFinished(w, e)
	}
}

// utf8BOM is the byte order mark that some Windows programs (.NET's
// Encoding.UTF8, Notepad) write before UTF-8 text.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// readBody reads the whole body within MaxBody (secure installed the
// limit). A leading UTF-8 byte order mark is dropped (RFC 8259 lets a
// parser ignore it), so neither the parser nor the tax service sees it. On
// failure it has answered.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	size := r.ContentLength
	if size > s.o.MaxBody {
		size = 0 // never allocate on a client's word beyond the limit
	}
	body, err := readAll(r.Body, size)
	if err == nil {
		return bytes.TrimPrefix(body, utf8BOM), true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge(s.o.MaxBody))
	} else {
		writeFieldError(w, http.StatusBadRequest, receipt.BodyField, "could not be read")
	}
	return nil, false
}

// maxFirstRead bounds the first buffer readAll takes on the client's
// word: a request may say it brings max_body bytes and then trickle, and
// each connection up to the max_connections cap could hold such a buffer.
// A receipt is a few KiB; a larger body grows the buffer as it arrives.
const maxFirstRead = 64 << 10

// readAll is io.ReadAll with a first buffer of size+1 bytes (at most
// maxFirstRead) when the request says its size (secure refused a size
// above MaxBody), so that a body is read into one allocation instead of a
// growing series; the extra byte lets the last Read see the end without
// growing it.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, min(size, maxFirstRead)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // a body longer than it said: grow
		}
	}
}

// storeBroken answers 503 when the database refuses every write (its file
// was moved or replaced, or a commit failed): not even a replay of an
// earlier receipt is acknowledged from a file that may be gone.
func (s *Server) storeBroken(w http.ResponseWriter, op string) bool {
	if s.d.Store == nil {
		return false
	}
	err := s.d.Store.Err()
	if err == nil {
		return false
	}
	code, msg := failureStatus(err, s.o.MaxBody)
	writeError(w, code, msg)
	s.log.Debug(op+" refused: the database refuses writes", zap.Error(err))
	return true
}

// fail answers err and logs the server's own failures.
func (s *Server) fail(w http.ResponseWriter, op string, err error) {
	if writeFailure(w, err, s.o.MaxBody) {
		s.log.Error(op+" failed", zap.Error(err))
	}
}

// neighbourDayKey is the derived key of the day next to now's, when now
// is within MidnightGrace of midnight, and since when an acceptance under
// it counts. A retry just after midnight derives today's key; the same
// body accepted under yesterday's key just before midnight is the same
// sale. Just before midnight, the same holds the other way round: a till's
// clock put back across midnight must not make a retry of a sale accepted
// just after it a new sale.
func (s *Server) neighbourDayKey(c *receipt.Create, now time.Time) (string, time.Time) {
	if midnight := startOfDay(now, s.o.Location); now.Sub(midnight) < MidnightGrace {
		return receipt.DefaultKey(c, midnight.Add(-time.Nanosecond), s.o.Location), midnight.Add(-MidnightGrace)
	}
	if next := startOfDay(now.Add(MidnightGrace), s.o.Location); next.After(now) {
		return receipt.DefaultKey(c, next, s.o.Location), next.Add(-MidnightGrace)
	}
	return "", time.Time{}
}

// idempotencyKey is the Idempotency-Key header, else the key derived from
// merchantTin, posNo, billIdSuffix and the local day. For a bad header it
// returns the problem instead.
func (s *Server) idempotencyKey(r *http.Request, c *receipt.Create, now time.Time) (string, string) {
	k := strings.TrimSpace(r.Header.Get(HeaderIdempotencyKey))
	if k == "" {
		return receipt.DefaultKey(c, now, s.o.Location), ""
	}
	if len(k) > MaxIdempotencyKey || strings.IndexFunc(k, func(c rune) bool { return c < 0x20 || c > 0x7e }) >= 0 {
		return "", "must be 1 to " + strconv.Itoa(MaxIdempotencyKey) + " printable ASCII characters"
	}
	return clientKeyPrefix + k, ""
}

// answerAfterWait applies the wait rule to a new entry: the upstream's own
// answer if it comes in time, else 202. sending says its first attempt
// began with the accept: no backlog is ahead of it.
func (s *Server) answerAfterWait(w http.ResponseWriter, r *http.Request, e queue.Entry, sending bool) {
	s.answerAfterWaitFor(w, r, e, sending, s.waitFor(w, r))
}

// answerAfterWaitFor is answerAfterWait with the wait given.
func (s *Server) answerAfterWaitFor(w http.ResponseWriter, r *http.Request, e queue.Entry, sending bool, wait time.Duration) {
	behind := !sending && s.behindBacklog(e, wait)
	if behind {
		wait = 0 // it cannot be sent within the wait: no point in holding the till
		if strings.HasPrefix(w.Header().Get(HeaderPreferenceApplied), "wait=") {
			w.Header().Del(HeaderPreferenceApplied) // the wait was not applied
		}
	}
	res, ok := s.await(r.Context(), e.QueueID, wait)
	if ok {
		syncer.TracePhase("awaited", e.QueueID)
		s.writeAnswer(w, e.QueueID, res)
		syncer.TracePhase("answered", e.QueueID)
		return
	}
	if res.State != "" {
		e.State = res.State // an attempt ended without an answer
	} else if wait > 0 {
		// It may be on its way by now. Without a wait the state read with
		// the entry is current, and the accept path reads nothing more.
		if now, err := s.d.Queue.Get(e.QueueID); err == nil {
			e.State = now.State
		}
	}
	why := "no answer from the tax service yet: receiptd keeps sending it"
	switch {
	case e.State == queue.StateHeld:
		why = heldNote(e.QueueID)
	case s.d.Worker != nil && !s.d.Worker.Status().Up:
		why = "the tax service is unreachable: receiptd sends it when it is back"
	case behind:
		why = "older receipts are still being sent: receiptd sends this one after them"
	}
	s.writeQueued(w, e, why)
}

// behindBacklog reports whether as many entries as the worker has send
// slots are due to be sent before e, so that e cannot be answered within a
// wait. It is only worth reading when the request would wait and the
// upstream is up (otherwise nothing waits anyway); on an error it reports
// false, so the request waits as usual.
func (s *Server) behindBacklog(e queue.Entry, wait time.Duration) bool {
	if wait <= 0 || s.d.Worker == nil || !s.d.Worker.Status().Up {
		return false
	}
	slots := s.d.Worker.Slots()
	n, err := s.d.Queue.ClaimableAhead(e.QueueID, s.o.Now(), slots)
	if err != nil {
		s.log.Warn("reading the queue ahead of a new entry", zap.String("queueId", e.QueueID), zap.Error(err))
		return false
	}
	return n >= slots
}

// answerReplay answers a repeated create; see "Replays" in the package doc.
func (s *Server) answerReplay(w http.ResponseWriter, r *http.Request, e queue.Entry) {
	if res, ok := s.recent(r.Context(), e); ok {
		s.writeAnswer(w, e.QueueID, res)
		return
	}
	switch e.State {
	case queue.StateQueued, queue.StateSending:
		s.answerAfterWait(w, r, e, false)
	case queue.StateSent, queue.StatePayment, queue.StateCancelled, queue.StateHeld:
		if s.o.QueuedAnswer == QueuedAnswerError {
			s.replayAsError(w, e)
			return
		}
		s.answerFinished(w, e)
	default:
		s.answerFinished(w, e)
	}
}

// answerFinished answers from what the queue kept of an entry that no
// longer waits for the upstream.
func (s *Server) answerFinished(w http.ResponseWriter, e queue.Entry) {
	switch e.State {
	case queue.StateRejected, queue.StateDeleteRejected:
		code, msg := http.StatusBadRequest, "rejected by the tax service"
		if e.Outcome != nil {
			if e.Outcome.HTTPStatus != 0 {
				code = e.Outcome.HTTPStatus
			}
			if e.Outcome.Message != "" {
				msg = e.Outcome.Message
			}
		}
		writeJSON(w, code, errorBody{Status: "ERROR", Message: msg, QueueID: e.QueueID, Outcome: e.Outcome})
	case queue.StateCancelled, queue.StateDeleted:
		writeJSON(w, http.StatusOK, accepted{QueueID: e.QueueID, State: e.State, Message: "already " + string(e.State), Outcome: e.Outcome})
	case queue.StateSent, queue.StatePayment:
		writeJSON(w, http.StatusAccepted, accepted{QueueID: e.QueueID, State: e.State, Outcome: e.Outcome,
			Message: "already sent to the tax service; its lottery number and QR data are no longer held and cannot be given again"})
	case queue.StateHeld:
		if s.o.QueuedAnswer == QueuedAnswerError {
			s.writeQueued(w, e, "it is held: its sending is uncertain and an operator must check it with the tax service")
			return
		}
		writeJSON(w, http.StatusAccepted, accepted{QueueID: e.QueueID, State: e.State, Outcome: e.Outcome,
			Message: "stored; " + heldNote(e.QueueID)})
	default:
		s.writeQueued(w, e, "state "+string(e.State))
	}
}

// writeAnswer answers with the upstream's answer and tells the mailbox
// that a POS has received it (see "Late answer" in the package doc).
func (s *Server) writeAnswer(w http.ResponseWriter, queueID string, res syncer.Result) {
	writeUpstream(w, queueID, res, 0)
	if s.d.Answers != nil {
		s.d.Answers.Delivered(queueID)
	}
}

// writeUpstream answers with the upstream's own status code and body, or
// with code instead when it is not zero. A body that is not JSON (a
// proxy's HTML page) is replaced by PosAPI's error envelope, so a POS
// always gets a body it can parse.
func writeUpstream(w http.ResponseWriter, queueID string, res syncer.Result, code int) {
	if code == 0 {
		code = res.StatusCode
	}
	if code == 0 {
		code = http.StatusOK
	}
	switch {
	case len(res.Body) == 0:
		if code == http.StatusNoContent {
			code = http.StatusOK // our own short body replaces "no content"
		}
		writeJSON(w, code, accepted{QueueID: queueID, State: res.State, Message: "answered by the tax service"})
	case !res.JSON && !json.Valid(res.Body):
		writeJSON(w, code, errorBody{Status: "ERROR", QueueID: queueID, Message: fmt.Sprintf(
			"the tax service answered HTTP %d with a body that is not JSON; see GET /receiptd/entries/%s", res.StatusCode, queueID)})
	default:
		writeRaw(w, code, res.Body)
	}
}

// recent returns the upstream's answer for e while it is held, for a
// replay to give.
func (s *Server) recent(ctx context.Context, e queue.Entry) (syncer.Result, bool) {
	if s.d.Answers == nil {
		return syncer.Result{}, false
	}
	if unsent(e.State) {
		return s.d.Answers.Recent(e.QueueID)
	}
	// Finished on disk: its answer may be a moment from being published.
	ctx, cancel := context.WithTimeout(ctx, publishWait)
	defer cancel()
	stop := context.AfterFunc(s.quit, cancel)
	defer stop()
	return s.d.Answers.Settled(ctx, e.QueueID)
}

// publishWait bounds a replay's wait for an answer whose outcome is
// committed: the worker publishes it right after the commit.
const publishWait = 5 * time.Second

// await waits up to wait for the upstream's answer to queueID. It gives up
// early when the request ends or a Serve is shutting down.
func (s *Server) await(ctx context.Context, queueID string, wait time.Duration) (syncer.Result, bool) {
	if wait <= 0 || s.d.Answers == nil {
		return syncer.Result{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	stop := context.AfterFunc(s.quit, cancel)
	defer stop()
	return s.d.Answers.Await(ctx, queueID)
}

// waitFor is how long this request waits for the upstream: Options.Wait,
// or what its Prefer header asks, capped at MaxWait. An honoured preference
// is echoed in Preference-Applied.
func (s *Server) waitFor(w http.ResponseWriter, r *http.Request) time.Duration {
	p := parsePrefer(r.Header.Values(HeaderPrefer))
	switch {
	case p.async:
		w.Header().Set(HeaderPreferenceApplied, "respond-async")
		return 0
	case p.hasWait:
		d := min(p.wait, s.o.MaxWait)
		applied := "wait=0" // a POS that waits on its own (receiptd-bench too)
		if d >= time.Second {
			applied = "wait=" + strconv.FormatInt(int64(d/time.Second), 10)
		}
		w.Header().Set(HeaderPreferenceApplied, applied)
		return d
	}
	return s.o.Wait
}
