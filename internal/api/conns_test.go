package api_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// posPost posts a receipt on a fresh connection, as a POS without
// keep-alive does.
func posPost(t *testing.T, base, suffix string, hdr ...string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/rest/receipt", strings.NewReader(testkit.Receipt(suffix)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// closedByServer reports whether the server closed c within wait: a read
// ends with EOF or a reset instead of the deadline.
func closedByServer(t *testing.T, c net.Conn, wait time.Duration) bool {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

func dialRaw(t *testing.T, base, send string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	if send != "" {
		_, err = io.WriteString(c, send)
		require.NoError(t, err)
	}
	return c
}

// TestConnCapClosesTheOldestIdle: at the cap, a new connection closes the
// one idle the longest (here: one that never sent a byte, then one stuck
// in its headers), and the POS's request is answered.
func TestConnCapClosesTheOldestIdle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: api.Options{MaxConns: 3}})
	idle := dialRaw(t, e.base, "")
	time.Sleep(20 * time.Millisecond) // each older than the next
	half := dialRaw(t, e.base, "POST /rest/receipt HTTP/1.1\r\nHost: 127.0.0.1\r\nConte")
	time.Sleep(20 * time.Millisecond)
	third := dialRaw(t, e.base, "")
	time.Sleep(20 * time.Millisecond)

	code, err := posPost(t, e.base, "cap1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.True(t, closedByServer(t, idle, 2*time.Second), "the oldest idle connection is closed for the POS")
	require.False(t, closedByServer(t, third, 100*time.Millisecond), "only one is closed per new connection")

	dialRaw(t, e.base, "") // the cap is full again
	time.Sleep(20 * time.Millisecond)
	code, err = posPost(t, e.base, "cap2")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.True(t, closedByServer(t, half, 2*time.Second), "then the one stuck in its headers")
	require.Contains(t, e.logText(), "connection cap reached")
}

// TestConnCapNeverClosesARequestBeingAnswered: connections whose request
// has been read are never closed for a new one; when all are busy, the
// new connection is the one closed, and the busy ones are answered.
func TestConnCapNeverClosesARequestBeingAnswered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: api.Options{MaxConns: 2}})
	require.NoError(t, e.sim.SetFaults(sim.Faults{Latency: 1500 * time.Millisecond}))
	codes := make(chan int, 2)
	for _, s := range []string{"busy1", "busy2"} {
		go func() {
			code, err := posPost(t, e.base, s, "Prefer", "wait=10")
			if err != nil {
				code = -1
			}
			codes <- code
		}()
	}
	require.Eventually(t, func() bool { return e.counts()[queue.StateSending] == 2 }, 5*time.Second, 5*time.Millisecond)
	late := dialRaw(t, e.base, "")
	require.True(t, closedByServer(t, late, 2*time.Second), "a new connection is closed while every one is busy")
	for range 2 {
		require.Equal(t, http.StatusOK, <-codes, "a request being answered was cut off")
	}
}
