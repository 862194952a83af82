package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func TestHostAllowList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true, api: api.Options{AllowedHosts: []string{"till-7.shop.lan"}}})
	for _, c := range []struct {
		host string
		code int
	}{
		{"localhost:7080", http.StatusOK},
		{"LOCALHOST", http.StatusOK},
		{"127.0.0.1:7080", http.StatusOK},
		{"127.8.9.10", http.StatusOK},
		{"[::1]:7080", http.StatusOK},
		{"till-7.shop.lan:7080", http.StatusOK},
		{"attacker.example:7080", http.StatusForbidden}, // DNS rebinding
		{"attacker.example", http.StatusForbidden},
		{"localhost.attacker.example", http.StatusForbidden},
		{"127.0.0.1.nip.io", http.StatusForbidden},
		{"10.0.0.5:7080", http.StatusForbidden},
	} {
		t.Run(c.host, func(t *testing.T) {
			r := e.do(http.MethodGet, "/receiptd/status", "", "Host", c.host)
			require.Equal(t, c.code, r.code, "%s", r.body)
			if c.code == http.StatusForbidden {
				require.Contains(t, r.json(t)["message"], "not allowed")
			}
		})
	}
}

func TestCrossOriginRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true})
	host := strings.TrimPrefix(e.base, "http://")
	for _, c := range []struct {
		name string
		hdr  []string
		code int
	}{
		{"no browser headers (a POS)", nil, http.StatusAccepted},
		{"same origin", []string{"Origin", e.base, "Sec-Fetch-Site", "same-origin"}, http.StatusAccepted},
		{"user typed the URL", []string{"Sec-Fetch-Site", "none"}, http.StatusAccepted},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"same-site other port", []string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"foreign Origin", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"null Origin", []string{"Origin", "null"}, http.StatusForbidden},
		{"Origin on another port", []string{"Origin", "http://" + strings.Replace(host, ":", ":1", 1)}, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := append([]string{"Prefer", "wait=0"}, c.hdr...)
			r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt(fmt.Sprintf("%06d", len(c.name))), hdr...)
			require.Equal(t, c.code, r.code, "%s", r.body)
			if c.code == http.StatusForbidden {
				require.Contains(t, r.json(t)["message"], "cross-origin")
				g := e.do(http.MethodGet, "/receiptd/entries", "", c.hdr...)
				require.Equal(t, http.StatusForbidden, g.code, "reads are refused too")
			}
		})
	}
}

func TestContentTypeRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true})
	for _, c := range []struct {
		ct   string
		code int
	}{
		{"application/json", http.StatusAccepted},
		{"application/json; charset=utf-8", http.StatusAccepted},
		{"Application/JSON;charset=UTF-8", http.StatusAccepted},
		{"", http.StatusUnsupportedMediaType},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"multipart/form-data; boundary=x", http.StatusUnsupportedMediaType},
		{"application/jsonx", http.StatusUnsupportedMediaType},
	} {
		t.Run(c.ct, func(t *testing.T) {
			r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000200"), "Content-Type", c.ct, "Prefer", "wait=0")
			require.Equal(t, c.code, r.code, "%s", r.body)
			d := e.do(http.MethodDelete, "/rest/receipt", `{"id":"Q999999999999"}`, "Content-Type", c.ct, "Prefer", "wait=0")
			if c.code == http.StatusUnsupportedMediaType {
				require.Equal(t, c.code, d.code)
			}
		})
	}
	r := e.do(http.MethodPost, "/receiptd/entries/Q000000000001/retry", "", "Content-Type", "")
	require.Equal(t, http.StatusUnsupportedMediaType, r.code, "every POST, not only receipts")
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true, api: api.Options{Token: "s3cret-token"}})
	for _, path := range []string{"/receiptd/status", "/receiptd/entries", "/readyz", "/metrics", "/api/info/check/getBranchInfo", "/receiptd/backup"} {
		require.Equal(t, http.StatusUnauthorized, e.do(http.MethodGet, path, "").code, path)
		require.Equal(t, http.StatusUnauthorized, e.do(http.MethodGet, path, "", "Authorization", "Bearer wrong").code, path)
		require.Equal(t, http.StatusUnauthorized, e.do(http.MethodGet, path, "", "Authorization", "Basic czNjcmV0LXRva2Vu").code, path)
	}
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000300"))
	require.Equal(t, http.StatusUnauthorized, r.code)
	require.Contains(t, r.h.Get("WWW-Authenticate"), "Bearer")
	require.Equal(t, 0, e.counts()["queued"], "nothing stored without the token")

	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/healthz", "").code, "liveness needs no token")
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/receiptd/status", "", "Authorization", "Bearer s3cret-token").code)
	r = e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000300"), "Authorization", "bearer s3cret-token", "Prefer", "wait=0")
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true, api: api.Options{MaxBody: 4096}})
	big := strings.Replace(testkit.Receipt("000400"), `"totalVat":1`, `"totalVat":1,"pad":"`+strings.Repeat("x", 5000)+`"`, 1)
	r := e.do(http.MethodPost, "/rest/receipt", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code, "%s", r.body)
	require.Contains(t, r.json(t)["message"], "4096")

	// Without Content-Length (chunked), the limit holds while reading.
	req, err := http.NewRequest(http.MethodPost, e.base+"/rest/receipt", io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	require.Zero(t, req.ContentLength, "length unknown: sent chunked")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
	require.Empty(t, e.counts()["queued"])
}

func TestHeaderSizeBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true})
	c, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 2*api.MaxHeaderBytes))
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, res.StatusCode)
}

func TestUnixSocket(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("mode bits do not apply on Windows")
	}
	dir, err := os.MkdirTemp("", "rcpt") // short: socket paths are limited to ~100 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "api.sock")

	// A stale socket file from a crashed run is replaced.
	stale, err := net.Listen("unix", path)
	require.NoError(t, err)
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, stale.Close())
	_, err = os.Stat(path)
	require.NoError(t, err, "the stale file is left behind")

	ln, err := api.ListenUnix(path)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o660), fi.Mode().Perm())

	// A live socket is not taken over; a regular file is not removed.
	_, err = api.ListenUnix(path)
	require.ErrorIs(t, err, api.ErrSocketInUse)
	regular := filepath.Join(dir, "config.toml")
	require.NoError(t, os.WriteFile(regular, []byte("x"), 0o600))
	_, err = api.ListenUnix(regular)
	require.ErrorIs(t, err, api.ErrNotSocket)
	require.FileExists(t, regular)

	e := newEnv(t, envOpts{noWorker: true})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln) }()
	defer func() { cancel(); require.NoError(t, <-served) }()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	defer hc.CloseIdleConnections()
	// Whatever Host a client puts on a socket request, no browser can make
	// one: the Host check does not apply.
	res, err := hc.Get("http://receiptd.sock/receiptd/status")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}
