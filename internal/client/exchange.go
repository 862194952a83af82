package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// Raw is an upstream answer as it came: status, headers and body
// byte-for-byte.
type Raw struct {
	StatusCode int
	Header     http.Header
	Body       []byte
	// Sent and Received are our wall clock when the request was about to
	// leave and when the answer's head arrived.
	Sent, Received time.Time
}

// sendTrace records, from the transport's own callbacks, whether the request
// was written completely. That is the only reliable line between NotSent
// and Ambiguous: error strings differ per platform and Go version.
type sendTrace struct {
	gotConn atomic.Bool
	wrote   atomic.Bool
}

func (t *sendTrace) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { t.gotConn.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				t.wrote.Store(true)
			}
		},
	}
}

// transportError classifies a failure before any response head arrived.
func (t *sendTrace) transportError(op Op, err error) *Error {
	if t.gotConn.Load() && t.wrote.Load() {
		return &Error{Op: op, Class: Ambiguous, Err: fmt.Errorf("request sent, no answer: %w", err)}
	}
	// No connection, or a connection the request was never completely
	// written to: the upstream cannot have processed it (a partial body
	// never reaches its handler).
	return &Error{Op: op, Class: NotSent, Err: err}
}

// exchange performs one request within the client's timeout and reads the
// whole answer. A non-nil *Raw comes with every answer whose head arrived,
// even when its body could not be read, except an answer larger than
// Config.MaxAnswer: it is not read further, and what was read is not
// returned, so nobody hands on or keeps a part of it. Such an answer is
// Ambiguous for a create or delete (the request went; what the answer said
// is unknown) and Transient for a GET (a failure: never cached, never
// passed on). The returned error, when not nil, is an *Error; non-2xx
// statuses are NOT errors here (callers decide).
func (c *Client) exchange(ctx context.Context, op Op, target string, body []byte) (*Raw, error) {
	timeout := c.timeout
	if op.Query() {
		timeout = c.queryTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var tr sendTrace
	ctx = httptrace.WithClientTrace(ctx, tr.clientTrace())
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, op.method(), target, rd)
	if err != nil {
		return nil, &Error{Op: op, Class: NotSent, Err: fmt.Errorf("build request: %w", err)}
	}
	c.setHeaders(req, op, body != nil)
	sent := time.Now()
	var resp *http.Response
	if conn := c.predialed(ctx, op, req); conn != nil {
		resp, err = c.roundTripOn(ctx, conn, req, &tr)
	} else {
		resp, err = c.httpClient(op).Do(req)
	}
	if err != nil {
		return nil, tr.transportError(op, err)
	}
	defer resp.Body.Close()
	raw := &Raw{StatusCode: resp.StatusCode, Header: resp.Header, Sent: sent, Received: time.Now()}
	if op != OpCreateReceipt {
		c.noteTiming(op, raw, "") // CreateReceipt tells it with the answer's date
	}
	raw.Body, err = readBody(resp.Body, c.maxAnswer)
	if errors.Is(err, ErrBodyTooLarge) {
		cl := Transient
		if op.method() != http.MethodGet {
			cl = Ambiguous
		}
		return nil, &Error{Op: op, Class: cl, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("read response: %w", err)}
	}
	if err != nil {
		cl, bad := statusClass(resp.StatusCode)
		if !bad {
			// A 2xx head without its body: whatever was done is done,
			// and we cannot tell what it was.
			cl = Ambiguous
		}
		return raw, &Error{Op: op, Class: cl, StatusCode: resp.StatusCode,
			Err: fmt.Errorf("read response: %w", err)}
	}
	return raw, nil
}

// noteTiming tells Config.OnTiming about one answer.
func (c *Client) noteTiming(op Op, raw *Raw, receiptDate string) {
	if c.onTiming == nil || raw == nil {
		return
	}
	c.onTiming(Timing{Op: op, Sent: raw.Sent, Received: raw.Received, Date: raw.Header.Get("Date"), ReceiptDate: receiptDate})
}

// readBody reads at most limit bytes; a longer body is ErrBodyTooLarge
// after limit+1 bytes, and the rest is never read (closing the body then
// closes the connection).
func readBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("more than %d bytes: %w", limit, ErrBodyTooLarge)
	}
	return b, nil
}
