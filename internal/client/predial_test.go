package client_test

import (
	"context"
	"net"
	"net/http"
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
}

func startConnLog(t *testing.T) (*connLog, string) {
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
// dialed before the create began, and on no other; it carries that one
// request. A connection older than PredialFresh is not taken: it is
// closed and the create dials its own. A predial no create took is
// closed by Close.
func TestPredialedConnectionCarriesOneCreate(t *testing.T) {
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
	require.True(t, l.accepted[0].Before(before))

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
