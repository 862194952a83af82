// Package apiclient is the client of a running daemon's local API that
// the operator commands (status, entries, retry, export, backup) and the
// demo's outage script share: requests with the bearer token, the daemon's
// refusals as *AnswerError, and "is receiptd running?" when it cannot be
// reached. It imports nothing of ours.
package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrNotRunning wraps every failure to reach the daemon, so the message
// says what an operator should check first.
var ErrNotRunning = errors.New("is receiptd running?")

// Client talks to a running daemon's local API: the operator commands
// (status, entries, retry, export, backup) and the demo's outage script.
// Package main finds the address and token (flags, then the config).
type Client struct {
	Base  string // http://host:port, no trailing slash
	Token string // the bearer token; "" sends none
	HTTP  *http.Client
}

// Do sends one request and returns the response when its status is 2xx;
// any other status is an *AnswerError carrying the daemon's message. The
// caller closes the body.
func (c *Client) Do(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		return nil, fmt.Errorf("%w cannot reach it at %s: %w", ErrNotRunning, c.Base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w", method, path, &AnswerError{Status: resp.Status, Code: resp.StatusCode,
			Message: errorMessage(resp.Body)})
	}
	return resp, nil
}

// AnswerError is a non-2xx answer of the daemon.
type AnswerError struct {
	Status  string // "409 Conflict"
	Code    int
	Message string // the daemon's message
}

func (e *AnswerError) Error() string { return "daemon answered " + e.Status + ": " + e.Message }

// GetJSON decodes a 2xx answer into v, within 30 seconds.
func (c *Client) GetJSON(ctx context.Context, method, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.Do(ctx, method, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// errorMessage extracts "message" from the daemon's error body, or shows
// the start of whatever else it is.
func errorMessage(r io.Reader) string {
	body, _ := io.ReadAll(io.LimitReader(r, 4096))
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		return e.Message
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), "?"))
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut-- // not inside a character
		}
		s = s[:cut] + "..."
	}
	return s
}

// DaemonStatus is the part of GET /receiptd/status that `receiptd status`
// prints.
type DaemonStatus struct {
	Counts          map[string]int `json:"counts"`
	OldestUnsentAge int64          `json:"oldestUnsentAge"`
	Alert           string         `json:"alert"`
	Upstream        struct {
		State     string    `json:"state"`
		Since     time.Time `json:"since"`
		LastError string    `json:"lastError"`
	} `json:"upstream"`
	LastSuccess *time.Time `json:"lastSuccess"`
	Version     string     `json:"version"`
	// Update is update.json as the daemon reads it (its state "idle" when
	// no release was ever offered).
	Update struct {
		State   string     `json:"state"`
		Message string     `json:"message"`
		Since   *time.Time `json:"since"`
	} `json:"update"`
}

// PrintDaemonStatus reads the running daemon's state through its API and
// prints it in a few lines: version and alert, the tax service, the
// queue, and the update unless it is idle.
func PrintDaemonStatus(ctx context.Context, w io.Writer, c *Client) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st DaemonStatus
	if err := c.GetJSON(ctx, "GET", "/receiptd/status", &st); err != nil {
		return err
	}
	version := st.Version
	if version == "" {
		version = "unknown"
	}
	fmt.Fprintf(w, "daemon: running at %s (version %s); alert: %s\n", c.Base, version, st.Alert)
	up := "reachable"
	if st.Upstream.State != "up" {
		up = "NOT reachable"
	}
	fmt.Fprintf(w, "  tax service: %s since %s", up, st.Upstream.Since.Local().Format(time.DateTime))
	if st.Upstream.LastError != "" && st.Upstream.State != "up" {
		fmt.Fprintf(w, " (last error: %s)", st.Upstream.LastError)
	}
	fmt.Fprintln(w)
	waiting := st.Counts["queued"] + st.Counts["sending"] + st.Counts["delete_queued"]
	need := st.Counts["held"] + st.Counts["rejected"] + st.Counts["payment"] + st.Counts["delete_rejected"]
	fmt.Fprintf(w, "  queue: %d waiting, %d need a person, %d sent; oldest unsent %s\n",
		waiting, need, st.Counts["sent"], time.Duration(st.OldestUnsentAge)*time.Second)
	if u := st.Update; u.State != "idle" && u.State != "" {
		fmt.Fprintf(w, "  update: %s", u.State)
		if u.Since != nil {
			fmt.Fprintf(w, " since %s", u.Since.Local().Format(time.DateTime))
		}
		if u.Message != "" {
			fmt.Fprintf(w, " (%s)", u.Message)
		}
		fmt.Fprintln(w, "; receiptd update status says more")
	}
	if st.Alert != "none" && st.Alert != "" {
		fmt.Fprintf(w, "  the status page says what needs doing: %s/\n", c.Base)
	}
	return nil
}
