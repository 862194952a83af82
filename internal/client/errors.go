package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinel errors. They are wrapped, so test with errors.Is.
var (
	// ErrConfig: Config is invalid (New).
	ErrConfig = errors.New("invalid client configuration")
	// ErrNotConfigured: a lookup was asked for but Config.LookupBaseURL is
	// empty. Carried by an *Error of class NotSent.
	ErrNotConfigured = errors.New("upstream not configured")
	// ErrBadSegment: a classification segment is empty or whitespace-only,
	// "." or "..", or there are more than six. Returned before anything is
	// sent.
	ErrBadSegment = errors.New("bad classification segment")
	// ErrBadOp: the operation is unknown or not a GET (Get).
	ErrBadOp = errors.New("bad operation")
	// ErrNotFound: the upstream answered that the thing asked for does not
	// exist (TIN info with data null).
	ErrNotFound = errors.New("not found")
	// ErrDecode: a response body does not have the expected shape.
	ErrDecode = errors.New("undecodable response")
	// ErrEnvelope: a lookup envelope carries a status other than 200 (its
	// msg is in the error text).
	ErrEnvelope = errors.New("upstream envelope status")
	// ErrBodyTooLarge: a response body exceeds Config.MaxAnswer.
	ErrBodyTooLarge = errors.New("response body too large")
)

// Class says what a caller may do after a failed call.
type Class int

var _ fmt.Stringer = Class(0)

// The error classes. The zero Class is invalid, so a forgotten class never
// reads as "safe to retry".
const (
	// NotSent: the request provably never reached the upstream (dial
	// refused, DNS failure, TLS handshake or proxy failure, a timeout or
	// cancellation before the request was written). Safe to send again.
	NotSent Class = iota + 1
	// Ambiguous: the request was written but its answer was lost (timeout
	// after sending, connection reset or EOF while reading the answer, an
	// unreadable 2xx answer). A create may have been issued.
	Ambiguous
	// Rejected: the upstream refused the request (4xx other than 408/429,
	// or a body status ERROR). Sending it again will not help.
	Rejected
	// Transient: the upstream failed for now (5xx, 408, 429, an unexpected
	// status, an undecodable lookup answer). Retry later, no sooner than
	// Error.RetryAfter when set.
	Transient
)

func (c Class) String() string {
	switch c {
	case NotSent:
		return "not sent"
	case Ambiguous:
		return "ambiguous"
	case Rejected:
		return "rejected"
	case Transient:
		return "transient"
	}
	return "unknown class " + strconv.Itoa(int(c))
}

// Error is every error of a call that got as far as trying the network.
type Error struct {
	Op         Op
	Class      Class
	StatusCode int           // HTTP status, 0 when no answer came
	Message    string        // the upstream's message (body "message" or "msg"), or the HTTP status text
	Body       []byte        // the upstream's body verbatim, when one came; may hold lottery/qrData: never persist
	RetryAfter time.Duration // from Retry-After, 0 when absent
	Err        error         // the underlying cause, when there is one
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Op, e.Class)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ClassOf returns the Class of the first *Error in err's chain, and false
// when there is none.
func ClassOf(err error) (Class, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Class, true
	}
	return 0, false
}

// statusClass classifies an HTTP status; ok is false for 2xx.
func statusClass(code int) (Class, bool) {
	switch {
	case code >= 200 && code < 300:
		return 0, false
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests:
		return Transient, true
	case code >= 400 && code < 500:
		return Rejected, true
	}
	// 5xx, and anything unexpected (a 3xx of a misdirected POST, say): the
	// safe reading is "try again later", never "drop the receipt".
	return Transient, true
}

// statusError builds the *Error of a non-2xx answer.
func statusError(op Op, code int, h http.Header, body []byte) *Error {
	cl, _ := statusClass(code)
	e := &Error{Op: op, Class: cl, StatusCode: code, Body: body, Message: bodyMessage(body)}
	if e.Message == "" {
		e.Message = http.StatusText(code)
	}
	if h != nil {
		e.RetryAfter = ParseRetryAfter(h.Get("Retry-After"), time.Now())
	}
	return e
}

// MaxMessage bounds, in bytes, an upstream message the client hands on
// (Error.Message, Receipt.Message): receiptd keeps them on disk in every
// attempt's history and outcome, and a broken upstream's 1 MiB message
// must not grow a receipt by that much at each attempt. Real messages are
// a sentence.
const MaxMessage = 1024

// clipMessage cuts s to MaxMessage bytes at a rune boundary, marking the
// cut with "…".
func clipMessage(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	n := MaxMessage
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// bodyMessage returns the "message" (PosAPI) or "msg" (lookup envelope) of
// a JSON body, clipped to MaxMessage, or "" when there is none.
func bodyMessage(body []byte) string {
	return clipMessage(rawBodyMessage(body))
}

func rawBodyMessage(body []byte) string {
	var m struct {
		Message *string `json:"message"`
		Msg     *string `json:"msg"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	if m.Message != nil && *m.Message != "" {
		return *m.Message
	}
	if m.Msg != nil {
		return *m.Msg
	}
	return ""
}

// maxRetryAfter caps what an upstream may ask for, so a garbage header
// cannot park the worker for years.
const maxRetryAfter = 24 * time.Hour

// ParseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date
// (relative to now). Absent, malformed or past values give 0; values are
// capped at 24h.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}
