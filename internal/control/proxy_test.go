package control_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control/controltest"
)

// forwardProxy is an HTTP proxy on 127.0.0.1:0 that tunnels CONNECT (the
// WebSocket transport) and forwards absolute-URL requests (HTTP polling),
// counting both.
func forwardProxy(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Method == http.MethodConnect {
			tunnel(w, r)
			return
		}
		r.RequestURI = ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func tunnel(w http.ResponseWriter, r *http.Request) {
	dst, err := net.Dial("tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer dst.Close()
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	go func() { _, _ = io.Copy(dst, conn) }()
	_, _ = io.Copy(conn, dst)
}

// TestClientThroughProxy: control.proxy carries both transports.
func TestClientThroughProxy(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			proxy, hits := forwardProxy(t)
			tl := startTillWith(t, tr.url(srv), fmt.Sprintf("proxy = %q", proxy.URL))
			agent(t, srv, tl.client.InstanceUID(), func(a controltest.Agent) bool { return a.Description != nil })
			require.Positive(t, hits.Load(), "the connection went through the proxy")
		})
	}
}
