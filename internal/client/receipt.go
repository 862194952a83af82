package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/jsonscan"
)

// Receipt create statuses.
const (
	StatusSuccess = "SUCCESS"
	StatusPayment = "PAYMENT"
	StatusError   = "ERROR"
)

// MaxID bounds a receipt id in a create answer, in bytes. The live ids
// are 33 digits; a longer one is no receipt id (and would not fit the
// queue's index of upstream ids).
const MaxID = 128

// Receipt is the part of a create answer receiptd acts on. Body is the
// upstream's answer verbatim: it contains the lottery number and QR data,
// so it may be handed to the POS but must never be persisted or logged.
//
// Only Status decides the outcome. The other fields are kept when they are
// a JSON string or number (as written) and left empty when the upstream
// sent another type: the live service sends documented fields with other
// types, and a side field must never turn an issued receipt into an
// unknown outcome (which the caller may retry, issuing the sale twice).
type Receipt struct {
	HTTPStatus  int
	Status      string // SUCCESS, PAYMENT or ERROR
	ID          string // 33 digits
	Date        string // as the upstream wrote it; see ParseTime
	Message     string
	PosID       json.Number // empty unless posId is a number (or a string holding one)
	SubReceipts []SubReceipt
	Body        []byte
}

// SubReceipt is a sub-receipt's identity in a create answer.
type SubReceipt struct {
	ID            string
	BankAccountID string
}

// Time parses Date (both wire formats).
func (r *Receipt) Time() (time.Time, error) { return ParseTime(r.Date) }

// looseString is a field that never fails its object's decoding: a JSON
// string, or a number kept as written; any other type (null, bool, object,
// array) leaves it empty.
type looseString string

var _ json.Unmarshaler = (*looseString)(nil)

func (l *looseString) UnmarshalJSON(b []byte) error {
	*l = looseOf(b) // the decoder has validated the whole body
	return nil
}

// looseSubs is the receipts list: anything but an array is no list, and
// an element that is not an object is left out.
type looseSubs []SubReceipt

var _ json.Unmarshaler = (*looseSubs)(nil)

func (l *looseSubs) UnmarshalJSON(b []byte) error {
	*l = nil
	var elems []json.RawMessage
	if json.Unmarshal(b, &elems) != nil {
		return nil
	}
	for _, e := range elems {
		var s struct {
			ID            looseString `json:"id"`
			BankAccountID looseString `json:"bankAccountId"`
		}
		if len(e) == 0 || e[0] != '{' || json.Unmarshal(e, &s) != nil {
			continue
		}
		*l = append(*l, SubReceipt{ID: string(s.ID), BankAccountID: string(s.BankAccountID)})
	}
	return nil
}

type receiptWire struct {
	Status   looseString `json:"status"`
	ID       looseString `json:"id"`
	Date     looseString `json:"date"`
	Message  looseString `json:"message"`
	PosID    looseString `json:"posId"`
	Receipts looseSubs   `json:"receipts"`
}

// DecodeReceipt decodes a create (or delete) answer's body. Unknown fields
// are ignored, numbers are not parsed, and a known field of an unexpected
// type is left empty (see Receipt). It fails only for a body that is not
// JSON or not an object (null decodes to an empty Receipt).
func DecodeReceipt(body []byte) (*Receipt, error) {
	if i := jsonscan.SkipSpace(body, 0); i < len(body) && body[i] == '{' && json.Valid(body) {
		w := scanReceipt(body[i:len(bytes.TrimRight(body, " \t\r\n"))])
		return w.receipt(body), nil
	}
	return decodeReceiptJSON(body)
}

// decodeReceiptJSON is DecodeReceipt by encoding/json: for what is not a
// JSON object (its errors, and null), and the reference its scan agrees
// with.
func decodeReceiptJSON(body []byte) (*Receipt, error) {
	var w receiptWire
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("receipt: %w: %w", ErrDecode, err)
	}
	return w.receipt(body), nil
}

// receipt is the Receipt w decodes to, with body.
func (w *receiptWire) receipt(body []byte) *Receipt {
	r := &Receipt{Status: string(w.Status), ID: string(w.ID), Date: string(w.Date),
		Message: clipMessage(string(w.Message)), SubReceipts: w.Receipts, Body: body}
	if isNumber(string(w.PosID)) {
		r.PosID = json.Number(w.PosID)
	}
	return r
}

// isNumber reports whether s is a JSON number literal, so a json.Number
// holding it marshals again.
func isNumber(s string) bool {
	return s != "" && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) &&
		s == strings.TrimSpace(s) && json.Valid([]byte(s))
}

// CreateReceipt sends body, the POS's request bytes, verbatim. On SUCCESS or
// PAYMENT it returns the Receipt and nil. On a status ERROR or a non-2xx
// answer it returns the Receipt (HTTPStatus and Body at least) AND an
// *Error (Rejected, or Transient for 5xx/408/429). A 2xx answer that cannot
// be read, lacks a known status, or says SUCCESS or PAYMENT without an id
// (or with one longer than MaxID), and any answer larger than
// Config.MaxAnswer, is Ambiguous: the receipt may have been issued.
// Without an answer it returns nil and a NotSent or Ambiguous *Error.
func (c *Client) CreateReceipt(ctx context.Context, body []byte) (*Receipt, error) {
	const op = OpCreateReceipt
	target, err := c.target(op, nil, nil)
	if err != nil {
		return nil, &Error{Op: op, Class: NotSent, Err: err}
	}
	raw, err := c.exchange(ctx, op, target, body)
	if raw == nil {
		return nil, err
	}
	rec, derr := DecodeReceipt(raw.Body)
	if rec == nil {
		rec = &Receipt{Body: raw.Body}
	}
	c.noteTiming(op, raw, rec.Date)
	rec.HTTPStatus = raw.StatusCode
	if err != nil {
		return rec, err
	}
	if _, bad := statusClass(raw.StatusCode); bad {
		return rec, statusError(op, raw.StatusCode, raw.Header, raw.Body)
	}
	switch {
	case derr != nil:
		return rec, &Error{Op: op, Class: Ambiguous, StatusCode: raw.StatusCode, Body: raw.Body, Err: derr}
	case rec.Status == StatusError:
		return rec, &Error{Op: op, Class: Rejected, StatusCode: raw.StatusCode, Body: raw.Body, Message: rec.Message}
	case rec.Status != StatusSuccess && rec.Status != StatusPayment:
		return rec, &Error{Op: op, Class: Ambiguous, StatusCode: raw.StatusCode, Body: raw.Body,
			Err: fmt.Errorf("unknown receipt status %.64q: %w", rec.Status, ErrDecode)}
	case strings.TrimSpace(rec.ID) == "":
		// Issued, says the answer, but under no id: the entry could never
		// be deleted, and what was issued is unknown.
		return rec, &Error{Op: op, Class: Ambiguous, StatusCode: raw.StatusCode, Body: raw.Body,
			Err: fmt.Errorf("status %s without an id: %w", rec.Status, ErrDecode)}
	case len(rec.ID) > MaxID:
		return rec, &Error{Op: op, Class: Ambiguous, StatusCode: raw.StatusCode, Body: raw.Body,
			Err: fmt.Errorf("status %s with an id of %d bytes, more than %d: %w", rec.Status, len(rec.ID), MaxID, ErrDecode)}
	}
	return rec, nil
}

// DeleteReceipt deletes the receipt id issued at date (the upstream's
// date string; empty omits it) and returns the upstream's answer as it came
// (the interface documents no body; whatever comes is passed on). A non-2xx
// answer, or a body status ERROR, is an *Error carrying the upstream's
// message.
func (c *Client) DeleteReceipt(ctx context.Context, id, date string) (*Raw, error) {
	const op = OpDeleteReceipt
	target, err := c.target(op, nil, nil)
	if err != nil {
		return nil, &Error{Op: op, Class: NotSent, Err: err}
	}
	body, err := json.Marshal(struct {
		ID   string `json:"id"`
		Date string `json:"date,omitempty"`
	}{id, date})
	if err != nil {
		return nil, &Error{Op: op, Class: NotSent, Err: err}
	}
	raw, err := c.exchange(ctx, op, target, body)
	if err != nil {
		return nil, err
	}
	if _, bad := statusClass(raw.StatusCode); bad {
		return raw, statusError(op, raw.StatusCode, raw.Header, raw.Body)
	}
	// Read as leniently as a create's answer: a message of another type
	// must not hide a refusal.
	if st, err := DecodeReceipt(raw.Body); err == nil && st.Status == StatusError {
		return raw, &Error{Op: op, Class: Rejected, StatusCode: raw.StatusCode, Body: raw.Body, Message: st.Message}
	}
	return raw, nil
}
