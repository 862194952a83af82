package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Receipt create statuses.
const (
	StatusSuccess = "SUCCESS"
	StatusPayment = "PAYMENT"
	StatusError   = "ERROR"
)

// Receipt is the part of a create answer receiptd acts on. Body is the
// upstream's answer verbatim: it contains the lottery number and QR data,
// so it may be handed to the POS but must never be persisted or logged.
type Receipt struct {
	HTTPStatus  int
	Status      string // SUCCESS, PAYMENT or ERROR
	ID          string // 33 digits
	Date        string // as the upstream wrote it; see ParseTime
	Message     string
	PosID       json.Number
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

type receiptWire struct {
	Status   string      `json:"status"`
	ID       flexString  `json:"id"`
	Date     flexString  `json:"date"`
	Message  flexString  `json:"message"`
	PosID    json.Number `json:"posId"`
	Receipts []struct {
		ID            flexString `json:"id"`
		BankAccountID flexString `json:"bankAccountId"`
	} `json:"receipts"`
}

// DecodeReceipt decodes a create answer's body. Unknown fields are ignored,
// numbers are not parsed.
func DecodeReceipt(body []byte) (*Receipt, error) {
	var w receiptWire
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("receipt: %w: %w", ErrDecode, err)
	}
	r := &Receipt{Status: w.Status, ID: string(w.ID), Date: string(w.Date),
		Message: string(w.Message), PosID: w.PosID, Body: body}
	for _, s := range w.Receipts {
		r.SubReceipts = append(r.SubReceipts, SubReceipt{ID: string(s.ID), BankAccountID: string(s.BankAccountID)})
	}
	return r, nil
}

// CreateReceipt sends body, the POS's request bytes, verbatim. On SUCCESS or
// PAYMENT it returns the Receipt and nil. On a status ERROR or a non-2xx
// answer it returns the Receipt (HTTPStatus and Body at least) AND an
// *Error (Rejected, or Transient for 5xx/408/429). A 2xx answer that cannot
// be read or lacks a known status is Ambiguous: the receipt may have been
// issued. Without an answer it returns nil and a NotSent or Ambiguous
// *Error.
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
			Err: fmt.Errorf("unknown receipt status %q: %w", rec.Status, ErrDecode)}
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
	var st struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw.Body, &st) == nil && st.Status == StatusError {
		return raw, &Error{Op: op, Class: Rejected, StatusCode: raw.StatusCode, Body: raw.Body, Message: st.Message}
	}
	return raw, nil
}
