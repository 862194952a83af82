package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// MaxSegments is the deepest classification path: six levels.
const MaxSegments = 6

// CleanSegments trims classification segments and checks them: an empty or
// whitespace-only segment, "." or "..", or more than MaxSegments is an
// error wrapping ErrBadSegment. Nothing is sent for a bad path.
func CleanSegments(segs []string) ([]string, error) {
	if len(segs) > MaxSegments {
		return nil, fmt.Errorf("%d segments, at most %d: %w", len(segs), MaxSegments, ErrBadSegment)
	}
	out := make([]string, len(segs))
	for i, s := range segs {
		s = strings.TrimSpace(s)
		switch s {
		case "":
			return nil, fmt.Errorf("segment %d is empty: %w", i+1, ErrBadSegment)
		case ".", "..":
			return nil, fmt.Errorf("segment %d is %q: %w", i+1, s, ErrBadSegment)
		}
		out[i] = s
	}
	return out, nil
}

// Get performs any GET operation and returns the answer byte-for-byte (for
// the lookup cache and pass-through routes). segments are cleaned with
// CleanSegments, then path-escaped. On a non-2xx answer it returns the *Raw
// AND an *Error (Rejected or Transient); the envelope is not inspected.
func (c *Client) Get(ctx context.Context, op Op, query url.Values, segments ...string) (*Raw, error) {
	if !op.known() || op.method() != "GET" {
		return nil, &Error{Op: op, Class: NotSent, Err: fmt.Errorf("get %q: %w", op, ErrBadOp)}
	}
	segs, err := CleanSegments(segments)
	if err != nil {
		return nil, &Error{Op: op, Class: NotSent, Err: err}
	}
	target, err := c.target(op, query, segs)
	if err != nil {
		return nil, &Error{Op: op, Class: NotSent, Err: err}
	}
	return c.call(ctx, op, target, nil)
}

// call is exchange with a non-2xx answer made an *Error too: the *Raw and
// the *Error both come back, so a pass-through can hand the answer on.
func (c *Client) call(ctx context.Context, op Op, target string, body []byte) (*Raw, error) {
	raw, err := c.exchange(ctx, op, target, body)
	if err != nil {
		return raw, err
	}
	if _, bad := statusClass(raw.StatusCode); bad {
		return raw, statusError(op, raw.StatusCode, raw.Header, raw.Body)
	}
	return raw, nil
}

// SaveOprMerchants posts body (an operator's merchant registration,
// {"posNo","merchantTins"}) to the public API as it is and returns the
// answer byte-for-byte: on a non-2xx answer the *Raw AND an *Error, as Get.
// The X-API-KEY it needs comes from LookupHeaders or WithForward.
func (c *Client) SaveOprMerchants(ctx context.Context, body []byte) (*Raw, error) {
	target, err := c.target(OpSaveMerchants, nil, nil)
	if err != nil {
		return nil, &Error{Op: OpSaveMerchants, Class: NotSent, Err: err}
	}
	if body == nil {
		body = []byte{}
	}
	return c.call(ctx, OpSaveMerchants, target, body)
}

// decodeError wraps a decoder's failure of a 2xx lookup answer: an
// unknown thing is Rejected, anything else Transient (a captive portal's
// page, an upstream having a bad moment).
func decodeError(op Op, raw *Raw, err error) error {
	cl := Transient
	if errors.Is(err, ErrNotFound) {
		cl = Rejected
	}
	return &Error{Op: op, Class: cl, StatusCode: raw.StatusCode, Body: raw.Body,
		Message: bodyMessage(raw.Body), Err: err}
}

// getJSON performs the GET op and returns its answer as it came, refusing
// one that is not JSON.
func (c *Client) getJSON(ctx context.Context, op Op, query url.Values) (json.RawMessage, error) {
	return getDecoded(ctx, c, op, query, func(body []byte) (json.RawMessage, error) {
		if !json.Valid(body) {
			return nil, fmt.Errorf("%s: not JSON: %w", op, ErrDecode)
		}
		return json.RawMessage(body), nil
	})
}

// Info returns PosAPI's /rest/info answer as it came (its shape is not
// documented).
func (c *Client) Info(ctx context.Context) (json.RawMessage, error) {
	return c.getJSON(ctx, OpInfo, nil)
}

// SendData asks PosAPI to send its stored data to the tax authority and
// returns its answer as it came.
func (c *Client) SendData(ctx context.Context) (json.RawMessage, error) {
	return c.getJSON(ctx, OpSendData, nil)
}

// BankAccounts returns the bank accounts registered for tin as PosAPI sent
// them.
func (c *Client) BankAccounts(ctx context.Context, tin string) (json.RawMessage, error) {
	return c.getJSON(ctx, OpBankAccounts, url.Values{"tin": {tin}})
}

// getDecoded performs the GET op and decodes its 2xx answer with decode; a
// decoder's failure becomes an *Error carrying the answer (see decodeError).
func getDecoded[T any](ctx context.Context, c *Client, op Op, query url.Values,
	decode func([]byte) (T, error), segments ...string) (T, error) {
	var zero T
	raw, err := c.Get(ctx, op, query, segments...)
	if err != nil {
		return zero, err
	}
	out, err := decode(raw.Body)
	if err != nil {
		return zero, decodeError(op, raw, err)
	}
	return out, nil
}

// BranchInfo returns the district codes.
func (c *Client) BranchInfo(ctx context.Context) ([]BranchInfo, error) {
	return getDecoded(ctx, c, OpBranchInfo, nil, DecodeBranchInfo)
}

// ProductTaxCodes returns the product tax codes.
func (c *Client) ProductTaxCodes(ctx context.Context) ([]ProductTaxCode, error) {
	return getDecoded(ctx, c, OpProductTaxCode, nil, DecodeProductTaxCodes)
}

// MerchantInfo returns what the lookup API knows of the merchant tin; nil
// and no error for an unknown TIN.
func (c *Client) MerchantInfo(ctx context.Context, tin string) (*MerchantInfo, error) {
	return getDecoded(ctx, c, OpMerchantInfo, url.Values{"tin": {tin}}, DecodeMerchantInfo)
}

// TinInfo returns the TIN of a registration number. An unknown number is
// an *Error of class Rejected wrapping ErrNotFound.
func (c *Client) TinInfo(ctx context.Context, regNo string) (string, error) {
	return getDecoded(ctx, c, OpTinInfo, url.Values{"regNo": {regNo}}, DecodeTinInfo)
}

// Classification returns the rows under the given path of 0 to 6 codes,
// top-down (see CleanSegments).
func (c *Client) Classification(ctx context.Context, segments ...string) ([][]string, error) {
	return getDecoded(ctx, c, OpClassification, nil, DecodeClassification, segments...)
}
