package cache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/receiptd/receiptd/internal/client"
)

// judge reads a 2xx answer of op. It returns whether the answer is a
// negative one ("not known": cached for NegativeTTL), or an error when the
// answer must not be stored: not JSON (ErrBadAnswer), or a failure the
// upstream reported inside the body (ErrFailedAnswer). The lookup API
// reports its failures with HTTP 200 and {"msg","status":500,"data":null};
// storing that would replace good data, so only the kinds where "not known"
// means something (merchant info, TIN info) may have no data.
func judge(op client.Op, body []byte) (negative bool, err error) {
	if !json.Valid(body) {
		return false, fmt.Errorf("%s: %w", op, ErrBadAnswer)
	}
	switch op {
	case client.OpBranchInfo, client.OpProductTaxCode:
		// One global list each: no data is never a true answer.
		env, err := lookupEnvelope(op, body, 200)
		if err != nil {
			return false, err
		}
		if !isArray(env.Data) {
			return false, failed(op, env, "no list in data")
		}
		return false, nil
	case client.OpMerchantInfo:
		// data null with status 200 is an unknown TIN (field notes).
		env, err := lookupEnvelope(op, body, 200)
		if err != nil {
			return false, err
		}
		return env.Data == nil, nil
	case client.OpTinInfo:
		// An unknown regNo is status 500 with data null (field notes), so
		// that status is a negative answer, not a failure, here alone.
		env, err := lookupEnvelope(op, body, 200, 500)
		if err != nil {
			return false, err
		}
		if env.Status == 500 && env.Data != nil {
			return false, failed(op, env, "status 500 with data")
		}
		return env.Data == nil, nil
	case client.OpStockQr:
		// A bare object of the goods; an envelope with a status other
		// than 200 reports a failure.
		if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
			return false, fmt.Errorf("%s: answer is not an object: %w", op, ErrFailedAnswer)
		}
		return false, posFailure(op, body)
	case client.OpClassification:
		// A bare array of rows; anything else (an error envelope) failed.
		if !isArray(body) {
			return false, fmt.Errorf("%s: answer is not a list of rows: %w", op, ErrFailedAnswer)
		}
		return false, nil
	}
	// PosAPI's info and bank accounts: the shape is not documented, so
	// only a body that says it failed is refused.
	return false, posFailure(op, body)
}

// lookupEnvelope decodes a lookup envelope, refusing one whose status is
// present and not among ok (as client's okData does).
func lookupEnvelope(op client.Op, body []byte, ok ...int) (client.Envelope, error) {
	env, err := client.DecodeEnvelope(body)
	if err != nil {
		return env, fmt.Errorf("%s: not a lookup envelope: %w", op, ErrFailedAnswer)
	}
	if env.Status == 0 {
		return env, nil
	}
	for _, s := range ok {
		if env.Status == s {
			return env, nil
		}
	}
	return env, failed(op, env, "")
}

func failed(op client.Op, env client.Envelope, why string) error {
	if why != "" {
		why = ": " + why
	}
	return fmt.Errorf("%s: answer status %d %.100q%s: %w", op, env.Status, env.Msg, why, ErrFailedAnswer)
}

func isArray(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '['
}

// posFailure refuses a PosAPI answer that is an object whose status is a
// number other than 200 (the lookup error envelope) or "ERROR" (PosAPI's
// own refusal).
func posFailure(op client.Op, body []byte) error {
	var w map[string]json.RawMessage
	if json.Unmarshal(body, &w) != nil {
		return nil // not an object: a list of accounts, say
	}
	raw := bytes.TrimSpace(w["status"])
	var status string
	if err := json.Unmarshal(raw, &status); err != nil {
		status = string(raw) // a number, or null / absent
	}
	if n, err := strconv.Atoi(status); (err == nil && n != 200) || status == "ERROR" {
		var msg string
		if json.Unmarshal(w["message"], &msg) != nil || msg == "" {
			_ = json.Unmarshal(w["msg"], &msg)
		}
		return fmt.Errorf("%s: answer status %s %.100q: %w", op, status, msg, ErrFailedAnswer)
	}
	return nil
}
