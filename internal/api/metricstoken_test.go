package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

const (
	testToken        = "s3cret-token-of-the-pos"
	testMetricsToken = "scraper-key-for-metrics"
)

// TestMetricsToken holds auth.metrics_token to its contract over real
// HTTP: it opens GET /metrics and nothing else, with or without
// auth.token.
func TestMetricsToken(t *testing.T) {
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	type call struct {
		method, path string
		hdr          []string
		code         int
	}
	for _, c := range []struct {
		name  string
		opts  api.Options
		calls []call
	}{
		{"with auth.token", api.Options{Token: testToken, MetricsToken: testMetricsToken}, []call{
			{"GET", "/metrics", bearer(testMetricsToken), http.StatusOK},
			{"GET", "/metrics", bearer(testToken), http.StatusOK},
			{"GET", "/metrics", nil, http.StatusUnauthorized},
			{"GET", "/metrics", bearer("wrong-wrong-wrong"), http.StatusUnauthorized},
			{"GET", "/receiptd/status", bearer(testMetricsToken), http.StatusUnauthorized},
			{"GET", "/receiptd/entries", bearer(testMetricsToken), http.StatusUnauthorized},
			{"GET", "/receiptd/backup", bearer(testMetricsToken), http.StatusUnauthorized},
			{"GET", "/", bearer(testMetricsToken), http.StatusUnauthorized},
			{"GET", "/readyz", bearer(testMetricsToken), http.StatusUnauthorized},
			{"POST", "/rest/receipt", bearer(testMetricsToken), http.StatusUnauthorized},
			{"POST", "/metrics", bearer(testMetricsToken), http.StatusUnauthorized},
			{"GET", "/receiptd/status", bearer(testToken), http.StatusOK},
			{"GET", "/healthz", nil, http.StatusOK},
		}},
		{"without auth.token", api.Options{MetricsToken: testMetricsToken}, []call{
			{"GET", "/metrics", bearer(testMetricsToken), http.StatusOK},
			{"GET", "/metrics", nil, http.StatusUnauthorized},
			{"GET", "/metrics", bearer("wrong-wrong-wrong"), http.StatusUnauthorized},
			{"GET", "/receiptd/status", bearer(testMetricsToken), http.StatusUnauthorized},
			{"POST", "/rest/receipt", bearer(testMetricsToken), http.StatusUnauthorized},
			{"GET", "/receiptd/backup", bearer(testMetricsToken), http.StatusUnauthorized},
			// the other routes stay as open as loopback makes them
			{"GET", "/receiptd/status", nil, http.StatusOK},
			{"POST", "/rest/receipt", nil, http.StatusAccepted},
		}},
		{"no tokens at all", api.Options{}, []call{
			{"GET", "/metrics", nil, http.StatusOK},
			{"GET", "/receiptd/status", nil, http.StatusOK},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envOpts{noWorker: true, metrics: true, api: c.opts})
			for i, k := range c.calls {
				body := ""
				hdr := append([]string{"Prefer", "wait=0"}, k.hdr...)
				if k.method == http.MethodPost {
					body = testkit.Receipt("0007" + string(rune('0'+i%10)) + string(rune('0'+i/10)))
				}
				r := e.do(k.method, k.path, body, hdr...)
				require.Equal(t, k.code, r.code, "%s %s %v: %s", k.method, k.path, k.hdr, r.body)
				if k.code == http.StatusOK && k.path == "/metrics" {
					require.True(t, strings.Contains(string(r.body), "receiptd_"), "the figures are served")
				}
				if k.code == http.StatusUnauthorized && k.method == http.MethodPost {
					require.Equal(t, 0, e.counts()["queued"], "nothing stored with the scraper's key")
				}
			}
		})
	}
}
