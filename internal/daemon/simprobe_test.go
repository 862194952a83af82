package daemon_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

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
