package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// floodConns is how many connections the noisy neighbour holds: more than
// the daemon's file descriptor limit below, as ~20,000 were more than the
// limit of the till in the report.
const floodConns = 5000

// daemonNoFile is the daemon's RLIMIT_NOFILE in TestConnectionFloodDoesNotLockOutThePOS.
const daemonNoFile = 1024

// TestConnectionFloodDoesNotLockOutThePOS runs the real binary with a
// file descriptor limit of 1024, lets this process (another local
// program) hold 5,000 connections to it (idle, half-sent headers,
// half-sent bodies), and then posts a receipt as the POS would, with the
// contract's 2 s client timeout. Without a connection cap the daemon ran
// out of descriptors and the POS's connection waited in the kernel's
// backlog behind the flood; with one, the oldest idle connections are
// closed and the POS is answered.
func TestConnectionFloodDoesNotLockOutThePOS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and opens 5,000 connections")
	}
	raiseNoFile(t, floodConns+1000)
	s := testkit.StartSim(t, sim.Options{Seed: 14})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := testkit.Binary(t)
	// The daemon gets its own, smaller descriptor limit (soft and hard,
	// so Go's start-up does not raise it).
	wrapper := filepath.Join(dir, "receiptd-nofile")
	script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 3\nexec %q \"$@\"\n", daemonNoFile, bin)
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))

	cfg := config.Default()
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Listen = "127.0.0.1:0"
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = s.URL(), s.URL()
	p, err := harness.Start(ctx, wrapper, dir, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill() })
	require.NoError(t, p.WaitReady(ctx))

	conns := flood(t, p.Config().Listen)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})

	pos := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, p.URL()+"/rest/receipt", strings.NewReader(testkit.Receipt("flood1")))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := pos.Do(req)
	require.NoError(t, err, "the POS got no answer while %d connections were held", len(conns))
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.NotEmpty(t, resp.Header.Get("X-Queue-Id"))
	t.Logf("POS answered in %s with %d flood connections opened", time.Since(start).Round(time.Millisecond), len(conns))
	require.Contains(t, readLog(t, p.LogPath()), "connection cap reached")
	mresp, err := pos.Get(p.URL() + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	require.NoError(t, err)
	require.Regexp(t, `receiptd_connections_closed_at_cap_total\{which="idle"\} [1-9]`, string(metrics))
}

// flood opens floodConns connections to addr: a third idle, a third
// stopping inside their headers, a third inside their body. A dial the
// kernel does not complete within a second is left out.
func flood(t *testing.T, addr string) []net.Conn {
	t.Helper()
	parts := []string{
		"",
		"POST /rest/receipt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty",
		"POST /rest/receipt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 900\r\n\r\n{\"branchNo\":",
	}
	var conns []net.Conn
	failed := 0
	for i := range floodConns {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			failed++
			continue
		}
		if p := parts[i%len(parts)]; p != "" {
			_, _ = io.WriteString(c, p) // a connection the daemon closed already may refuse it
		}
		conns = append(conns, c)
	}
	t.Logf("flood: %d connections opened, %d dials did not complete", len(conns), failed)
	return conns
}

// raiseNoFile makes sure this process may hold n descriptors.
func raiseNoFile(t *testing.T, n uint64) {
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur >= n {
		return
	}
	lim.Cur = min(max(n, lim.Cur), lim.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < n {
		t.Skipf("needs %d file descriptors, the hard limit is %d (%v)", n, lim.Max, err)
	}
}

func readLog(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}
