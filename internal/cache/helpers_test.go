package cache

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// newClient is a real client of base for both PosAPI and lookups.
func newClient(t testing.TB, base string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{BaseURL: base, LookupBaseURL: base, StockBaseURL: base, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// env is a cache over st serving on a real local HTTP server.
type env struct {
	c   *Cache
	st  *store.Store
	srv *httptest.Server
	clk *testkit.ManualClock
}

func newEnv(t testing.TB, st *store.Store, up Upstream, cfg Config) *env {
	t.Helper()
	c, err := New(context.Background(), st, up, cfg, zaptest.NewLogger(t), nil)
	require.NoError(t, err)
	clk := testkit.NewManualClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	c.now = clk.Now
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return &env{c: c, st: st, srv: srv, clk: clk}
}

// answer is one local response, read whole.
type answer struct {
	status int
	header http.Header
	body   string
}

func (e *env) get(t testing.TB, path string) answer {
	t.Helper()
	return httpGet(t, e.srv.URL+path)
}

func httpGet(t testing.TB, url string) answer {
	t.Helper()
	a, err := tryGet(url)
	require.NoError(t, err)
	return a
}

// tryGet is httpGet for goroutines other than the test's (no FailNow).
func tryGet(url string) (answer, error) {
	resp, err := http.Get(url)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

func (a answer) cache() string { return a.header.Get(HeaderCache) }

// fakeUpstream is an httptest upstream answering from a function, counting
// requests per path.
type fakeUpstream struct {
	mu     sync.Mutex
	counts map[string]int
	srv    *httptest.Server
}

func newFakeUpstream(t testing.TB, h http.HandlerFunc) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{counts: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.counts[r.URL.Path]++
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[path]
}

func openStore(t testing.TB) *store.Store { return storetest.Open(t) }

// runCache runs c's background work until the test ends; stop ends it
// sooner, and fails the test when Run does not return within 5 s.
func runCache(t *testing.T, c *Cache) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}
