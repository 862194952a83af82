package queue

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendRest appends r as JSON, byte for byte what json.Marshal(r) makes
// (FuzzAppendRest holds them equal), without reflection: every outcome
// record is encoded on its sale's answer's path, where json.Marshal took
// about 12 µs of an online sale's CPU (docs/performance.md). A string
// needing escapes goes through encoding/json itself; a time MarshalJSON
// refuses (a year outside 0 to 9999) fails as json.Marshal does.
func appendRest(buf []byte, r *entryRest) ([]byte, error) {
	var err error
	buf = append(buf, '{')
	comma := false
	field := func(name string) {
		if comma {
			buf = append(buf, ',')
		}
		comma = true
		buf = append(append(append(buf, '"'), name...), '"', ':')
	}
	if len(r.Attempts) > 0 {
		field("attempts")
		buf = append(buf, '[')
		for i := range r.Attempts {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendAttempt(buf, &r.Attempts[i]); err != nil {
				return nil, err
			}
		}
		buf = append(buf, ']')
	}
	if r.AttemptsDropped != 0 {
		field("attemptsDropped")
		buf = strconv.AppendInt(buf, int64(r.AttemptsDropped), 10)
	}
	if o := r.Outcome; o != nil {
		field("outcome")
		buf = appendOutcome(buf, o)
	}
	if !r.NextAttemptAt.IsZero() {
		field("nextAttemptAt")
		if buf, err = appendJSONTime(buf, r.NextAttemptAt); err != nil {
			return nil, err
		}
	}
	for _, f := range [...]struct{ name, v string }{
		{"deleteTarget", r.DeleteTarget}, {"deleteId", r.DeleteID}, {"deleteDate", r.DeleteDate},
	} {
		if f.v != "" {
			field(f.name)
			buf = appendJSONString(buf, f.v)
		}
	}
	if r.Ambiguous != 0 {
		field("ambiguousAttempts")
		buf = strconv.AppendInt(buf, int64(r.Ambiguous), 10)
	}
	return append(buf, '}'), nil
}

func appendAttempt(buf []byte, a *Attempt) ([]byte, error) {
	buf = append(buf, `{"at":`...)
	buf, err := appendJSONTime(buf, a.At)
	if err != nil {
		return nil, err
	}
	buf = strconv.AppendInt(append(buf, `,"durationNs":`...), int64(a.Duration), 10)
	buf = appendJSONString(append(buf, `,"result":`...), string(a.Result))
	if a.Error != "" {
		buf = appendJSONString(append(buf, `,"error":`...), a.Error)
	}
	if a.HTTPStatus != 0 {
		buf = strconv.AppendInt(append(buf, `,"httpStatus":`...), int64(a.HTTPStatus), 10)
	}
	if a.UpstreamID != "" {
		buf = appendJSONString(append(buf, `,"upstreamId":`...), a.UpstreamID)
	}
	return append(buf, '}'), nil
}

func appendOutcome(buf []byte, o *Outcome) []byte {
	buf = append(buf, '{')
	comma := false
	str := func(name, v string) {
		if v == "" {
			return
		}
		if comma {
			buf = append(buf, ',')
		}
		comma = true
		buf = appendJSONString(append(append(append(buf, '"'), name...), '"', ':'), v)
	}
	str("status", o.Status)
	str("id", o.ID)
	str("date", o.Date)
	str("posId", o.PosID)
	if len(o.SubReceipts) > 0 {
		if comma {
			buf = append(buf, ',')
		}
		comma = true
		buf = append(buf, `"receipts":[`...)
		for i, s := range o.SubReceipts {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(append(buf, `{"id":`...), s.ID)
			if s.BankAccountID != "" {
				buf = appendJSONString(append(buf, `,"bankAccountId":`...), s.BankAccountID)
			}
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	str("message", o.Message)
	if o.HTTPStatus != 0 {
		if comma {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(append(buf, `"httpStatus":`...), int64(o.HTTPStatus), 10)
	}
	return append(buf, '}')
}

// appendJSONTime appends t as time.Time's MarshalJSON does, and fails as
// it does.
func appendJSONTime(buf []byte, t time.Time) ([]byte, error) {
	out, err := t.AppendText(append(buf, '"'))
	if err != nil {
		_, err = json.Marshal(t) // the error json.Marshal would return
		return nil, err
	}
	return append(out, '"'), nil
}

// appendJSONString appends s quoted. Printable ASCII other than the
// characters encoding/json escapes (", \, <, > and &) is copied; anything
// else is left to encoding/json, so the escapes are always its own.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(buf, q...)
		}
	}
	return append(append(append(buf, '"'), s...), '"')
}
