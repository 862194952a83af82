package client_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
)

// connLog is a simulator that records when each connection was accepted
// and how many requests each carried.
type connLog struct {
	mu       sync.Mutex
	accepted []time.Time
	requests map[net.Conn]int
	opened   int
	closed   int
}

// open is how many connections the server has not seen closed.
func (l *connLog) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opened - l.closed
}

func startConnLog(t *testing.T, with ...func(*connLog, *http.Server)) (*connLog, string) {
	t.Helper()
	s := sim.New(sim.Options{Seed: 3})
	l := &connLog{requests: map[net.Conn]int{}}
	type connKey struct{}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l.mu.Lock()
			l.requests[r.Context().Value(connKey{}).(net.Conn)]++
			l.mu.Unlock()
			s.Handler().ServeHTTP(w, r)
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			l.mu.Lock()
			l.accepted = append(l.accepted, time.Now())
			l.mu.Unlock()
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	for _, f := range with {
		f(l, srv)
	}
	cs := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		if cs != nil {
			cs(c, st)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		switch st {
		case http.StateNew:
			l.opened++
		case http.StateClosed, http.StateHijacked:
			l.closed++
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l, "http://" + ln.Addr().String()
}

func (l *connLog) counts() (conns int, perConn []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.requests {
		perConn = append(perConn, n)
	}
	return len(l.accepted), perConn
}

// A create sent with a predialed connection goes on that connection,
// dialed before the create began, and on no other. A connection older
// than PredialFresh is not taken: it is closed and the create dials its
// own. A predial no create took is closed by Close.
func TestPredialedConnectionCarriesTheCreate(t *testing.T) {
	t.Parallel()
	l, url := startConnLog(t)
	c, err := client.New(client.Config{BaseURL: url, LookupBaseURL: url, Timeout: 2 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()

	p := c.Predial()
	require.NotNil(t, p)
	require.Eventually(t, func() bool { n, _ := l.counts(); return n == 1 }, 2*time.Second, time.Millisecond, "dialed at once")
	before := time.Now()
	_, err = c.CreateReceipt(client.WithPredial(ctx, p), []byte(validReceipt))
	require.NoError(t, err)
	p.Close()
	n, per := l.counts()
	require.Equal(t, 1, n, "the create used the predialed connection")
	require.Equal(t, []int{1}, per)
	l.mu.Lock()
	first := l.accepted[0]
	l.mu.Unlock()
	require.True(t, first.Before(before))
	c.CloseIdleConnections() // no kept connection: the next predial dials

	stale := c.Predial()
	require.Eventually(t, func() bool { n, _ := l.counts(); return n == 2 }, 2*time.Second, time.Millisecond)
	time.Sleep(client.PredialFresh + 20*time.Millisecond)
	_, err = c.CreateReceipt(client.WithPredial(ctx, stale), []byte(validReceipt))
	require.NoError(t, err)
	stale.Close()
	n, per = l.counts()
	require.Equal(t, 3, n, "a stale connection is not taken: the create dialed its own")
	require.ElementsMatch(t, []int{1, 1}, per, "the stale one carried nothing")

	unused := c.Predial()
	unused.Close()
	unused.Close() // more than once
	_, err = c.CreateReceipt(client.WithPredial(ctx, unused), []byte(validReceipt))
	require.NoError(t, err, "a closed predial is never taken")
}

// createsInARow sends n creates through c, each with its predial, pause
// apart.
func createsInARow(t *testing.T, c *client.Client, n int, pause time.Duration) {
	t.Helper()
	for i := range n {
		if i > 0 {
			time.Sleep(pause)
		}
		p := c.Predial()
		_, err := c.CreateReceipt(client.WithPredial(context.Background(), p), []byte(validReceipt))
		p.Close()
		require.NoError(t, err, "create %d", i)
	}
}

// On a busy till (Linux) the next create goes on the connection of the
// last one, answered within PredialFresh/2: no dial, no new connection at
// the tax service. Elsewhere each create has a connection of its own.
func TestTheNextCreateTakesTheLastConnection(t *testing.T) {
	t.Parallel()
	l, url := startConnLog(t)
	c, err := client.New(client.Config{BaseURL: url, LookupBaseURL: url, Timeout: 2 * time.Second})
	require.NoError(t, err)
	createsInARow(t, c, 5, time.Millisecond)
	n, per := l.counts()
	if client.ReuseSupported {
		require.Equal(t, 1, n, "one connection carried every create")
		require.Equal(t, []int{5}, per)
	} else {
		require.Equal(t, 5, n, "a connection for each create")
		require.Equal(t, []int{1, 1, 1, 1, 1}, per)
	}
}

// A connection idle for more than PredialFresh/2 is not taken (it could be
// too old by the time the record is flushed): it is closed and the next
// create has a connection of its own; one nobody takes is closed once
// PredialFresh has passed.
func TestAnIdleConnectionIsNotKept(t *testing.T) {
	t.Parallel()
	l, url := startConnLog(t)
	c, err := client.New(client.Config{BaseURL: url, LookupBaseURL: url, Timeout: 2 * time.Second})
	require.NoError(t, err)
	createsInARow(t, c, 2, client.PredialFresh/2+20*time.Millisecond)
	n, per := l.counts()
	require.Equal(t, 2, n)
	require.Equal(t, []int{1, 1}, per)
	require.Eventually(t, func() bool { return l.open() == 0 }, 2*time.Second, 5*time.Millisecond,
		"the last create's connection is closed once PredialFresh has passed")
	runtime.KeepAlive(c) // closed by its timer, not by the collector's finalizer
}

// A kept connection the tax service has closed (here as soon as it is
// idle, without saying Connection: close) is seen closed before anything
// is written on it: the next create goes on a new connection and
// succeeds, and is never ambiguous. An answer that says Connection: close
// is never kept either.
func TestAClosedConnectionIsNotWrittenOn(t *testing.T) {
	t.Parallel()
	for name, srv := range map[string]func(*connLog, *http.Server){
		"closed when idle": func(_ *connLog, s *http.Server) {
			s.ConnState = func(c net.Conn, st http.ConnState) {
				if st == http.StateIdle {
					_ = c.Close()
				}
			}
		},
		"Connection: close": func(l *connLog, s *http.Server) {
			h := s.Handler
			s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Connection", "close")
				h.ServeHTTP(w, r)
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, url := startConnLog(t, srv)
			c, err := client.New(client.Config{BaseURL: url, LookupBaseURL: url, Timeout: 2 * time.Second})
			require.NoError(t, err)
			createsInARow(t, c, 3, 5*time.Millisecond)
			n, per := l.counts()
			require.Equal(t, 3, n)
			require.Equal(t, []int{1, 1, 1}, per)
		})
	}
}

// rawServer answers every request on a connection with answer, written
// in one piece, and counts the requests of each connection; it never
// closes a connection itself.
func rawServer(t *testing.T, answer string) (perConn func() []int, url string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var mu sync.Mutex
	var counts []int
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
			mu.Lock()
			i := len(counts)
			counts = append(counts, 0)
			mu.Unlock()
			go func() {
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					mu.Lock()
					counts[i]++
					mu.Unlock()
					if _, err := io.WriteString(conn, answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(counts)
	}, "http://" + ln.Addr().String()
}

// An answer that says Connection: close, or that has bytes after it in
// the same read, is never kept, even while the server keeps the
// connection open (and would answer a next request on it): each create
// goes on a connection of its own.
func TestAnAnswerThatEndsTheConnectionIsNotKept(t *testing.T) {
	t.Parallel()
	const body = `{"status":"SUCCESS","id":"123456789012345678901234567890123","date":"2026-11-28 10:00:00"}`
	ok := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	for name, answer := range map[string]string{
		"Connection: close": ok + "Connection: close\r\n\r\n" + body,
		"bytes after it":    ok + "\r\n" + body + "HTTP/1.1 200 OK\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			perConn, url := rawServer(t, answer)
			c, err := client.New(client.Config{BaseURL: url, LookupBaseURL: url, Timeout: 2 * time.Second})
			require.NoError(t, err)
			createsInARow(t, c, 3, time.Millisecond)
			require.Equal(t, []int{1, 1, 1}, perConn())
		})
	}
}
