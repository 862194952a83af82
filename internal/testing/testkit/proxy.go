package testkit

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Proxy is a forward HTTP proxy on 127.0.0.1:0 standing in for a shop's
// (upstream.proxy, fleet.proxy, control.proxy): it tunnels CONNECT (TLS,
// WebSockets) and forwards absolute-URL requests, and records each request
// it is given. A request that is not a proxy request is answered 400.
type Proxy struct {
	URL    string // http://127.0.0.1:port
	mu     sync.Mutex
	seen   []string
	routes map[string]string // Route's
}

// Route makes the proxy tunnel a CONNECT to host (host:port, a name only
// the test knows, such as head-office.test) to addr instead: a client
// that reaches host at all went through the proxy.
func (p *Proxy) Route(host, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.routes == nil {
		p.routes = map[string]string{}
	}
	p.routes[host] = addr
}

func (p *Proxy) dialAddr(host string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if addr, ok := p.routes[host]; ok {
		return addr
	}
	return host
}

// StartProxy starts a Proxy, closed when the test ends.
func StartProxy(t testing.TB) *Proxy {
	t.Helper()
	p := &Proxy{}
	fwd := &http.Transport{Proxy: nil}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodConnect:
			p.record("CONNECT " + r.Host)
			tunnel(w, r, p.dialAddr(r.Host))
		case !r.URL.IsAbs():
			http.Error(w, "not a proxy request", http.StatusBadRequest)
		default:
			p.record(r.Method + " " + r.URL.Path)
			forward(w, r, fwd)
		}
	}))
	t.Cleanup(func() { srv.Close(); fwd.CloseIdleConnections() })
	p.URL = srv.URL
	return p
}

// Requests is what went through the proxy so far, in order: "GET /path"
// for a forwarded request, "CONNECT host:port" for a tunnel.
func (p *Proxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func (p *Proxy) record(s string) {
	p.mu.Lock()
	p.seen = append(p.seen, s)
	p.mu.Unlock()
}

// forward sends r on through fwd and copies the answer back.
func forward(w http.ResponseWriter, r *http.Request, fwd *http.Transport) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	resp, err := fwd.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// tunnel connects r's client to addr (r.Host, or its Route) and copies
// both ways until either side closes.
func tunnel(w http.ResponseWriter, r *http.Request, addr string) {
	dst, err := net.Dial("tcp", addr)
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
