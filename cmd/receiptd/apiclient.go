package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/datadir"
)

// errNotRunning wraps every failure to reach the daemon, so the message
// says what an operator should check first.
var errNotRunning = errors.New("is receiptd running?")

// daemonFlags are the flags of the commands that talk to a running daemon.
type daemonFlags struct {
	addr, token, config string
}

func (f *daemonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "", "daemon address, host:port or URL (default: listen from the config)")
	fs.StringVar(&f.token, "token", "", "bearer token (default: auth.token from the config or RECEIPTD_AUTH_TOKEN)")
	fs.StringVar(&f.config, "config", "", "config file to take the address and token from")
}

// apiClient talks to a running daemon's local API.
type apiClient struct {
	base  string // http://host:port, no trailing slash
	token string
	hc    *http.Client
}

// client resolves the daemon's address: -addr, else the config's listen
// (a wildcard host becomes loopback), else its Unix socket. The token is
// -token, else the config's auth.token. The config is read only when
// something is missing.
func (f *daemonFlags) client() (*apiClient, error) {
	c := &apiClient{token: f.token, hc: &http.Client{Transport: &http.Transport{Proxy: nil}}}
	if f.addr != "" && f.token != "" && f.config == "" {
		return c, c.setBase(f.addr)
	}
	lc, err := loadConfig(f.config)
	if errors.Is(err, fs.ErrPermission) {
		return nil, usagef("%v (run as root or as a member of group receiptd, or pass -addr and -token)", err)
	}
	if err != nil {
		return nil, err
	}
	if c.token == "" {
		c.token = lc.cfg.Auth.Token
	}
	switch {
	case f.addr != "":
		return c, c.setBase(f.addr)
	case lc.cfg.Listen != "":
		return c, c.setBase(datadir.Dialable(lc.cfg.Listen))
	default:
		sock := lc.cfg.ListenUnix
		c.base = "http://localhost"
		c.hc.Transport = &http.Transport{Proxy: nil, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}
		return c, nil
	}
}

func (c *apiClient) setBase(addr string) error {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return usagef("-addr %q: want host:port or http://host:port", addr)
	}
	c.base = u.Scheme + "://" + u.Host
	return nil
}

// do sends one request and returns the response when its status is 2xx;
// any other status is an error carrying the daemon's message. The caller
// closes the body.
func (c *apiClient) do(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		return nil, fmt.Errorf("%w cannot reach it at %s: %w", errNotRunning, c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w", method, path, &answerError{status: resp.Status, code: resp.StatusCode,
			message: errorMessage(resp.Body)})
	}
	return resp, nil
}

// answerError is a non-2xx answer of the daemon.
type answerError struct {
	status  string // "409 Conflict"
	code    int
	message string // the daemon's message
}

func (e *answerError) Error() string { return "daemon answered " + e.status + ": " + e.message }

// getJSON decodes a 2xx answer into v, within timeout.
func (c *apiClient) getJSON(ctx context.Context, method, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.do(ctx, method, path)
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
		s = s[:200] + "..."
	}
	return s
}
