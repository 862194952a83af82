package controltest

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// MaxSent is the most bytes the server wrote to an agent in one HTTP
// answer or over one WebSocket connection, however either ended: what a
// till had to take in before it cut the answer or connection off.
func (s *Server) MaxSent() int64 { return s.maxSent.Load() }

// counted is the server's HTTPMiddleware: it counts what each answer, or
// each WebSocket connection once upgraded, writes. An answer over HTTP
// polling has writeTimeout to be written (a WebSocket connection's
// writes each have theirs, countingConn).
func (s *Server) counted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
		next.ServeHTTP(&countingWriter{ResponseWriter: w, s: s}, r)
	})
}

// sent adds n bytes to a stream's count (total) and keeps the largest.
func (s *Server) sent(total *atomic.Int64, n int) {
	t := total.Add(int64(n))
	for {
		m := s.maxSent.Load()
		if t <= m || s.maxSent.CompareAndSwap(m, t) {
			return
		}
	}
}

type countingWriter struct {
	http.ResponseWriter
	s *Server
	n atomic.Int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.s.sent(&w.n, n)
	return n, err
}

// Hijack hands the WebSocket upgrade a connection whose writes count.
func (w *countingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("controltest: the answer cannot be hijacked")
	}
	conn, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &countingConn{Conn: conn, s: w.s}, rw, nil
}

type countingConn struct {
	net.Conn
	s *Server
	n atomic.Int64
}

// writeTimeout ends a write to an agent that no longer reads (a till
// that cut a message off): under Wine such a write was seen to block
// for good, holding the connection's lock and every later Send.
const writeTimeout = 30 * time.Second

func (c *countingConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	n, err := c.Conn.Write(p)
	c.s.sent(&c.n, n)
	return n, err
}
