package cache

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// BenchmarkCachedLookup measures a cached merchant-info lookup through the
// local HTTP server (keep-alive client, 127.0.0.1), reporting the p50 and
// p99 of the per-request latencies next to ns/op. Run:
//
//	go test -run=^$ -bench=CachedLookup -benchtime=20000x ./internal/cache/
func BenchmarkCachedLookup(b *testing.B) {
	s := testkit.StartSim(b, sim.Options{Seed: 1})
	e := newEnv(b, openStore(b), newClient(b, s.URL()), Config{})
	url := e.srv.URL + "/api/info/check/getInfo?tin=5317878"
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(hc.CloseIdleConnections)
	if a := e.get(b, "/api/info/check/getInfo?tin=5317878"); a.cache() != Miss {
		b.Fatalf("first lookup: %s", a.cache())
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		resp, err := hc.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		lat = append(lat, time.Since(t0))
		if resp.Header.Get(HeaderCache) != Hit {
			b.Fatalf("X-Cache %q", resp.Header.Get(HeaderCache))
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkCachedLookupParallel is the same with concurrent clients
// (GOMAXPROCS goroutines).
func BenchmarkCachedLookupParallel(b *testing.B) {
	s := testkit.StartSim(b, sim.Options{Seed: 1})
	e := newEnv(b, openStore(b), newClient(b, s.URL()), Config{})
	url := e.srv.URL + "/api/info/check/barcode/v2/1"
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(hc.CloseIdleConnections)
	e.get(b, "/api/info/check/barcode/v2/1")
	var mu sync.Mutex
	var all []time.Duration
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var lat []time.Duration
		for pb.Next() {
			t0 := time.Now()
			resp, err := hc.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			lat = append(lat, time.Since(t0))
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	b.StopTimer()
	reportPercentiles(b, all)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(float64(len(lat)-1)*p)].Nanoseconds()) }
	b.ReportMetric(pct(0.50), "p50-ns")
	b.ReportMetric(pct(0.99), "p99-ns")
}

// BenchmarkHitHandler is the cache's own share of a hit: the handler called
// directly, no network.
func BenchmarkHitHandler(b *testing.B) {
	s := testkit.StartSim(b, sim.Options{Seed: 1})
	e := newEnv(b, openStore(b), newClient(b, s.URL()), Config{})
	e.get(b, "/api/info/check/getInfo?tin=5317878")
	req := httptest.NewRequest(http.MethodGet, "/api/info/check/getInfo?tin=5317878", nil)
	h := e.c.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}
