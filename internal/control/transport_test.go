package control_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control"
)

// TestClientFollowsNoRedirect: a head office answering with a redirect
// (here to an http:// address, as one that moved a till off TLS would) is
// not followed over either transport: the till asks control.opamp_url
// again later, and the address redirected to is never asked.
func TestClientFollowsNoRedirect(t *testing.T) {
	for _, tr := range []struct{ name, scheme string }{{"websocket", "ws"}, {"http polling", "http"}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			var followed, asked atomic.Int64
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				followed.Add(1)
				http.Error(w, "not here", http.StatusNotFound)
			}))
			t.Cleanup(target.Close)
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				http.Redirect(w, r, target.URL+"/v1/opamp", http.StatusFound)
			}))
			t.Cleanup(redirect.Close)
			url := strings.Replace(redirect.URL, "http", tr.scheme, 1) + "/v1/opamp"
			tl := startTill(t, url)
			require.Eventually(t, func() bool { return asked.Load() >= 3 }, 20*time.Second, 20*time.Millisecond,
				"the till asks its own URL again")
			require.Zero(t, followed.Load(), "the redirect is not followed")
			require.False(t, tl.client.Status().Connected)
		})
	}
}

// TestClientGivesUpOnASilentServer: a server that accepts the connection
// and never answers (no TLS, no upgrade, no HTTP answer) is given up on
// after the connect timeout, and the till tries again: a second
// connection arrives, over either transport.
func TestClientGivesUpOnASilentServer(t *testing.T) {
	for _, tr := range []struct{ name, scheme string }{{"websocket", "ws"}, {"http polling", "http"}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { _ = ln.Close() })
			var accepted atomic.Int64
			go func() {
				var held []net.Conn // never read from, never written to
				defer func() {
					for _, c := range held {
						_ = c.Close()
					}
				}()
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					held = append(held, c)
				}
			}()
			url := tr.scheme + "://" + ln.Addr().String() + "/v1/opamp"
			startTillOpts(t, url, "", func(o *control.Options) { o.ConnectTimeout = 200 * time.Millisecond })
			require.Eventually(t, func() bool { return accepted.Load() >= 2 }, 15*time.Second, 20*time.Millisecond,
				"the till gave up on the silent connection and connected again")
		})
	}
}
