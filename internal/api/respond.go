package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/store"
)

// errorBody is the tax service's error shape, which POS software already
// reads, plus the field-level list for validation failures.
type errorBody struct {
	Status  string               `json:"status"`
	Message string               `json:"message"`
	Errors  []receipt.FieldError `json:"errors,omitempty"`
	QueueID string               `json:"queueId,omitempty"`
	Outcome *queue.Outcome       `json:"outcome,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"status":"ERROR","message":"encode answer"}`)
	}
	writeRaw(w, code, b)
}

func writeRaw(w http.ResponseWriter, code int, body []byte) {
	// Set by key, canonical already: one slice fewer per header than Set.
	h := w.Header()
	h["Content-Type"] = []string{"application/json; charset=utf-8"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Status: "ERROR", Message: msg})
}

// writeFieldError answers a request refused for one field (or header) in
// the shape of a validation failure.
func writeFieldError(w http.ResponseWriter, code int, field, problem string) {
	writeJSON(w, code, errorBody{Status: "ERROR", Message: field + ": " + problem,
		Errors: []receipt.FieldError{{Field: field, Problem: problem}}})
}

// writeValidation answers a refused body: the first problem in message,
// every problem in errors.
func writeValidation(w http.ResponseWriter, ve *receipt.ValidationError) {
	writeJSON(w, http.StatusBadRequest, errorBody{Status: "ERROR", Message: ve.Error(), Errors: ve.Errors})
}

// writeFailure maps an error of reading, validating or storing a request to
// its answer. It reports whether the failure is the server's (5xx), which the
// caller logs.
func writeFailure(w http.ResponseWriter, err error, maxBody int64) bool {
	var ve *receipt.ValidationError
	if errors.As(err, &ve) {
		writeValidation(w, ve)
		return false
	}
	code, msg := failureStatus(err, maxBody)
	writeError(w, code, msg)
	return code >= 500
}

// failureStatus is the status code and message for err.
func failureStatus(err error, maxBody int64) (int, string) {
	var mbe *http.MaxBytesError
	var ve *receipt.ValidationError
	switch {
	case errors.As(err, &ve):
		return http.StatusBadRequest, ve.Error()
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, tooLarge(maxBody)
	case errors.Is(err, queue.ErrConflict):
		msg := "idempotency key reused with a different body: this receipt (same key, or same merchantTin, posNo and billIdSuffix today) was already accepted with other content"
		var ce *queue.ConflictError
		if errors.As(err, &ce) {
			msg += " as " + ce.First + ", now " + string(ce.State) + " (GET /receiptd/entries/" + ce.First + ")"
		}
		return http.StatusConflict, msg
	case errors.Is(err, queue.ErrNotFound):
		return http.StatusNotFound, "no such entry"
	case errors.Is(err, queue.ErrIllegalTransition):
		return http.StatusConflict, err.Error()
	case errors.Is(err, queue.ErrInvalid):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, store.ErrDiskFull):
		return http.StatusInsufficientStorage, "disk full: receiptd cannot store the request, nothing was stored; free disk space and send it again"
	case errors.Is(err, store.ErrMoved):
		return http.StatusServiceUnavailable, "receiptd's database file was moved, deleted or replaced: nothing can be stored, nothing was stored; an operator must restore it (see the receiptd log)"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, store.ErrClosed):
		return http.StatusServiceUnavailable, "receiptd is shutting down or busy: the request may not be stored; send it again (a repeat is recognised and never sent twice)"
	default:
		return http.StatusInternalServerError, "receiptd could not store the request: nothing was stored; see the receiptd log"
	}
}
