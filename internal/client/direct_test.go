package client_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

// createWays runs fn with a create's context for both ways a create
// goes: by the send transport, and on a predialed connection written and
// read by the caller (direct.go).
func createWays(t *testing.T, c *client.Client, fn func(t *testing.T, ctx context.Context)) {
	for _, way := range []string{"transport", "predialed"} {
		t.Run(way, func(t *testing.T) {
			ctx := context.Background()
			if way == "predialed" {
				p := c.Predial()
				t.Cleanup(p.Close)
				ctx = client.WithPredial(ctx, p)
			}
			fn(t, ctx)
		})
	}
}

// A create whose context ended before it began is never written, either
// way: NotSent, and the tax service sees nothing. (A predial that has
// dialed and a context that has ended were both ready; the direct path
// wrote the request in 16 of 40 tries before it checked.)
func TestACreateCancelledBeforeItBeganIsNotSent(t *testing.T) {
	t.Parallel()
	var got atomic.Int64
	base := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		answer(200, nil, `{"status":"SUCCESS","id":"1"}`)(w, r)
	})
	c, err := client.New(client.Config{BaseURL: base, Timeout: 30 * time.Second})
	require.NoError(t, err)
	for range 40 {
		createWays(t, c, func(t *testing.T, ctx context.Context) {
			time.Sleep(2 * time.Millisecond) // a predial's dial is done
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err := c.CreateReceipt(ctx, []byte(validReceipt))
			cl, ok := client.ClassOf(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, client.NotSent, cl, "%v", err)
		})
	}
	require.Zero(t, got.Load(), "no request reached the tax service")
}

// An answer larger than MaxAnswer that never ends (chunked, written on
// and on) is Ambiguous at once, either way, not at the client's timeout:
// its connection is closed, not read to its end. (Closing net/http's body
// first read the rest until the 30 s deadline.)
func TestATooLargeEndlessAnswerIsCutOff(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				_ = conn.SetWriteDeadline(time.Now().Add(40 * time.Second))
				fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
				chunk := strings.Repeat("a", 16<<10)
				for {
					if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
		}
	}()
	c, err := client.New(client.Config{BaseURL: "http://" + ln.Addr().String(), Timeout: 30 * time.Second, MaxAnswer: 1 << 10})
	require.NoError(t, err)
	createWays(t, c, func(t *testing.T, ctx context.Context) {
		done := make(chan error, 1)
		go func() {
			_, err := c.CreateReceipt(ctx, []byte(validReceipt))
			done <- err
		}()
		select {
		case err := <-done:
			cl, ok := client.ClassOf(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, client.Ambiguous, cl, "%v", err)
		case <-time.After(15 * time.Second): // the client's timeout is 30 s
			t.Fatal("the create read the endless answer on")
		}
	})
}
