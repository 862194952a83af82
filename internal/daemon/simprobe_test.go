package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// Issue 32, point 1: against `receiptd sim` on loopback, the lookup URLs
// left at their live defaults follow base_url; against anything else that
// is not the simulator (a till's PosAPI), they stay.
func TestLookupsFollowTheSimulatorOnly(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{})
	posapi := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	t.Cleanup(posapi.Close)
	for _, tc := range []struct {
		name, base, lookup string
		moved              []string
	}{
		{"the simulator, lookups at their defaults", s.URL(), config.Default().Upstream.LookupBaseURL,
			[]string{"upstream.lookup_base_url", "upstream.stock_base_url"}},
		{"a PosAPI that is not the simulator", posapi.URL, config.Default().Upstream.LookupBaseURL, nil},
		{"the simulator, lookup_base_url set elsewhere on purpose", s.URL(), "https://lookup.example",
			[]string{"upstream.stock_base_url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, tc.base)
			cfg.Upstream.LookupBaseURL = tc.lookup
			core, logs := observer.New(zap.InfoLevel)
			d, err := daemon.New(cfg, zap.New(core), "test")
			require.NoError(t, err)
			stop := run(t, d)
			defer func() { require.NoError(t, stop()) }()
			lines := logs.FilterMessageSnippet("lookup URLs left at their live defaults follow it").All()
			if tc.moved == nil {
				require.Empty(t, lines)
				return
			}
			require.Len(t, lines, 1)
			require.Equal(t, fmt.Sprint(tc.moved), fmt.Sprint(lines[0].ContextMap()["keys"]))
			if len(tc.moved) < 2 {
				return
			}
			before := s.Requests(sim.RouteBranchInfo)
			resp, body := getBody(t, d.URL()+"/api/info/check/getBranchInfo")
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			require.Greater(t, s.Requests(sim.RouteBranchInfo), before, "the lookup went to the simulator")
		})
	}
}

// probed is a server on 127.0.0.1:0 that counts the questions "are you
// the simulator?" (GET /sim/faults) it is asked.
type probed struct {
	url    string
	probes atomic.Int32
}

// serveProbed serves the simulator (isSim) or, as a till's PosAPI
// answers that route, a 404.
func serveProbed(t *testing.T, isSim bool) *probed {
	h := http.NotFoundHandler()
	if isSim {
		s := sim.New(sim.Options{Seed: 32})
		t.Cleanup(func() { _ = s.Close() })
		h = s.Handler()
	}
	p := &probed{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/sim/faults" {
			p.probes.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// A process asks a base_url whether it is the simulator once: the swaps a
// Supervisor makes while base_url stays (a head office's config applied
// in place) use the answer given at start, so a till's PosAPI is not asked
// again at each; a swap to another base_url asks that one, once, and a
// swap back asks nobody. Every Daemon built follows the answer: each one
// on the simulator logs the lookups it moved.
func TestSimulatorAskedOncePerBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		isSim bool
	}{
		{"the simulator", true},
		{"a PosAPI that is not the simulator", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := serveProbed(t, tc.isSim), serveProbed(t, tc.isSim)
			cfg := testConfig(t, a.url) // stock_base_url stays at its live default: base_url is asked
			if tc.isSim {
				cfg.Upstream.LookupBaseURL = config.Default().Upstream.LookupBaseURL
			}
			core, logs := observer.New(zap.InfoLevel)
			sup, err := daemon.NewSupervisor(cfg, zap.New(core), "test", 10*time.Second)
			require.NoError(t, err)
			serveSupervisor(t, sup)
			require.EqualValues(t, 1, a.probes.Load(), "asked at start")

			const swaps = 3
			next := cfg
			for i := range swaps {
				next.Sync.MaxBackoff = config.Dur(time.Duration(101+i) * time.Millisecond)
				require.NoError(t, sup.Apply(context.Background(), next), "swap %d", i)
			}
			require.EqualValues(t, 1, a.probes.Load(), "swaps that keep base_url do not ask again")

			next.Upstream.BaseURL = b.url
			require.NoError(t, sup.Apply(context.Background(), next))
			require.EqualValues(t, 1, b.probes.Load(), "a swap to a new base_url asks it")
			next.Upstream.BaseURL, next.Sync.MaxBackoff = a.url, config.Dur(time.Second)
			require.NoError(t, sup.Apply(context.Background(), next))
			require.EqualValues(t, 1, a.probes.Load(), "a swap back to base_url asked before does not ask again")
			require.EqualValues(t, 1, b.probes.Load())

			followed := map[string]int{}
			for _, l := range logs.FilterMessageSnippet("lookup URLs left at their live defaults follow it").All() {
				followed[fmt.Sprint(l.ContextMap()["base_url"])]++
			}
			if !tc.isSim {
				require.Empty(t, followed)
				return
			}
			require.Equal(t, map[string]int{a.url: 1 + swaps + 1, b.url: 1}, followed,
				"every Daemon built on the simulator follows it")
		})
	}
}
