package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/syncer"
)

// Values of Options.QueuedAnswer (accept.queued_answer).
const (
	QueuedAnswer202   = "202"
	QueuedAnswerError = "error"
)

// DefaultRetryAfter is the Retry-After of a queued answer when
// Options.RetryAfter is zero.
const DefaultRetryAfter = 10 * time.Second

// Headers of queued and late answers.
const (
	HeaderRetryAfter = "Retry-After"
	// HeaderUpstreamStatus is the HTTP status the tax service answered
	// with, on a late answer (which is itself 200).
	HeaderUpstreamStatus = "X-Upstream-Status"
)

// unsent reports whether an entry in state st still waits for the tax
// service (queue's unsent states).
func unsent(st queue.State) bool {
	switch st {
	case queue.StateQueued, queue.StateSending, queue.StateHeld, queue.StateDeleteQueued:
		return true
	}
	return false
}

// retryAfter is the Retry-After value, whole seconds, at least 1.
func (s *Server) retryAfter() string {
	return strconv.FormatInt(int64((s.o.RetryAfter+time.Second-1)/time.Second), 10)
}

// writeQueued answers a request whose entry is stored but has no answer
// from the tax service yet; why says what receiptd is doing about it. With
// QueuedAnswer "202" that is 202 {"queueId","state","message"}; with
// "error" it is 503 with PosAPI's error envelope, so that a POS that knows
// only PosAPI takes its error path, and the message tells the cashier not
// to ring the sale again under a new number.
func (s *Server) writeQueued(w http.ResponseWriter, e queue.Entry, why string) {
	if s.o.QueuedAnswer != QueuedAnswerError {
		see, seeEnd := " (see GET /receiptd/entries/", ")"
		if e.Kind != queue.KindDelete {
			see, seeEnd = " (GET /receiptd/entries/", "/answer gives the tax service's answer once it comes)"
		}
		writeAccepted(w, accepted{QueueID: e.QueueID, State: e.State, Message: "accepted and stored; "}, why, see, e.QueueID, seeEnd)
		return
	}
	msg := "receiptd: sale stored as " + e.QueueID + " but not yet registered with the tax service; " + why +
		". Do NOT ring this sale again under a new bill number: send the same receipt again later to get its e-barimt."
	if e.Kind == queue.KindDelete {
		msg = "receiptd: delete stored as " + e.QueueID + " but not yet carried out by the tax service; " + why +
			". Send the same delete again later to see its outcome."
	}
	w.Header().Set(HeaderRetryAfter, s.retryAfter())
	writeJSON(w, http.StatusServiceUnavailable, posError{Status: "ERROR", Message: msg})
}

// writeAccepted writes a 202 with a's body, its message a.Message
// followed by the parts of more, byte for byte as writeJSON would, without
// encoding/json's reflection (or joining the parts first) when every
// string is plain printable ASCII (the answer to every receipt accepted
// without a wait).
func writeAccepted(w http.ResponseWriter, a accepted, more ...string) {
	n := len(`{"queueId":"","state":"","message":""}`) + len(a.QueueID) + len(a.State) + len(a.Message)
	plain := a.Outcome == nil && plainJSON(a.QueueID) && plainJSON(string(a.State)) && plainJSON(a.Message)
	for _, m := range more {
		n += len(m)
		plain = plain && plainJSON(m)
	}
	if !plain {
		a.Message += strings.Join(more, "")
		writeJSON(w, http.StatusAccepted, a)
		return
	}
	b := make([]byte, 0, n)
	b = append(append(b, `{"queueId":"`...), a.QueueID...)
	b = append(append(b, `","state":"`...), a.State...)
	b = append(append(b, `","message":"`...), a.Message...)
	for _, m := range more {
		b = append(b, m...)
	}
	writeRaw(w, http.StatusAccepted, append(b, `"}`...))
}

// plainJSON reports whether encoding/json writes s between its quotes
// unchanged: printable ASCII without the characters it escapes.
func plainJSON(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// posError is PosAPI's own error envelope and nothing more, for answers a
// POS that knows only PosAPI must parse.
type posError struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// replayAsError answers, with QueuedAnswer "error", a repeated create whose
// entry is finished without an answer held in memory, or held: never a
// 2xx that such a POS would print as a fresh e-barimt.
func (s *Server) replayAsError(w http.ResponseWriter, e queue.Entry) {
	switch e.State {
	case queue.StateHeld:
		s.answerFinished(w, e)
		return
	case queue.StateCancelled:
		writeJSON(w, http.StatusConflict, posError{Status: "ERROR", Message: "receiptd: this sale (" + e.QueueID +
			") was cancelled before it reached the tax service and was never registered. A new sale needs a new bill number."})
		return
	}
	id := ""
	if e.Outcome != nil && e.Outcome.ID != "" {
		id = " as receipt " + e.Outcome.ID
		if e.Outcome.Date != "" {
			id += " of " + e.Outcome.Date
		}
	}
	writeJSON(w, http.StatusConflict, posError{Status: "ERROR", Message: "receiptd: this sale (" + e.QueueID +
		") is already registered with the tax service" + id + "; its lottery number and QR code are no longer held and cannot be printed again." +
		" Do NOT ring it again under a new bill number."})
}

// getAnswer serves GET /receiptd/entries/{queueId}/answer: see "Late answer"
// in the package doc.
func (s *Server) getAnswer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("queueId")
	// The state on disk is read first: an outcome is recorded before its
	// answer is published, and the worker reports the entry as pending
	// until then, so a finished state with nothing held means gone.
	e, err := s.d.Queue.Get(id)
	if err != nil {
		s.fail(w, "late answer", err)
		return
	}
	res, st := syncer.Result{}, syncer.AnswerUnknown
	if s.d.Answers != nil {
		res, st = s.d.Answers.Take(id)
	}
	w.Header().Set(HeaderQueueID, id)
	w.Header().Set("Cache-Control", "no-store")
	// Pending because of a failed attempt's marker (its State is set), yet
	// finished on disk: finished without the worker (a delete cancelled
	// it), so there is no answer to wait for.
	markerOnly := st == syncer.AnswerPending && res.State != "" && !unsent(e.State)
	switch {
	case st == syncer.AnswerGiven:
		w.Header().Set(HeaderUpstreamStatus, strconv.Itoa(res.StatusCode))
		writeUpstream(w, id, res, http.StatusOK)
	case (st == syncer.AnswerPending && !markerOnly) || (st == syncer.AnswerUnknown && unsent(e.State)):
		if res.State != "" {
			e.State = res.State
		}
		msg := "no answer from the tax service yet: ask again later"
		if e.State == queue.StateHeld {
			// No answer comes by itself: an operator must act first.
			msg = "no answer from the tax service, and none comes until an operator acts; " + heldNote(id)
		}
		w.Header().Set(HeaderRetryAfter, s.retryAfter())
		writeJSON(w, http.StatusAccepted, accepted{QueueID: id, State: e.State, Message: msg})
	case st == syncer.AnswerAlreadyGiven:
		writeJSON(w, http.StatusGone, accepted{QueueID: id, State: e.State, Outcome: e.Outcome,
			Message: "the tax service's answer was already given (by this route, or in the answer to the request itself); it is given once"})
	default:
		writeJSON(w, http.StatusGone, accepted{QueueID: id, State: e.State, Outcome: e.Outcome,
			Message: "the tax service's answer is no longer held: it expired, was pushed out of memory, receiptd restarted, or there was none; the outcome kept is in outcome"})
	}
}
