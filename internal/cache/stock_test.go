package cache

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

const stockPath = "/api/inventory/stock/getStockQr?stockQr=BF6B1FBA86FB4C41ADDBB01C09C024F5"

// do sends one request with headers to the cache's server.
func (e *env) do(t *testing.T, method, path, body string, headers map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// TestStockQrCachedWithForwardedToken: the POS's Authorization reaches the
// stock API; the answer is cached per stamp and served offline; a refusal
// (no token) is passed through and not cached.
func TestStockQrCachedWithForwardedToken(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	auth := map[string]string{"Authorization": "Bearer pos-token"}

	a := e.do(t, "GET", stockPath, "", nil)
	require.Equal(t, http.StatusUnauthorized, a.status, "no token: the stock API's refusal, passed through")
	a = e.do(t, "GET", stockPath, "", auth)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, Miss, a.cache())
	require.Contains(t, a.body, `"barcode":"8656170014754"`)
	require.Equal(t, 2, s.Requests(sim.RouteStockQr))

	e.clk.Add(time.Minute)
	a = e.do(t, "GET", stockPath, "", auth)
	require.Equal(t, Hit, a.cache())
	require.Equal(t, 2, s.Requests(sim.RouteStockQr), "a hit asks nothing")

	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	e.clk.Add(200 * time.Hour) // past the weekly refresh
	a = e.do(t, "GET", stockPath, "", auth)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, Stale, a.cache(), "offline: the cached goods")
	a = e.do(t, "GET", "/api/inventory/stock/getStockQr?stockQr=0A1B2C3D4E5F60718293A4B5C6D7E8F9", "", auth)
	requireEnvelope(t, a, http.StatusServiceUnavailable)
	a = e.do(t, "GET", "/api/inventory/stock/getStockQr", "", auth)
	requireEnvelope(t, a, http.StatusBadRequest)
}

// TestSaveOprMerchantsPassedThrough: the body and X-API-KEY reach the
// lookup API as they are, its answer comes back; unreachable is a 503
// envelope; only POST is allowed.
func TestSaveOprMerchantsPassedThrough(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	const path = "/api/tpi/receipt/saveOprMerchants"
	body := `{"posNo":"10005299","merchantTins":["77001059076"]}`
	key := map[string]string{"X-API-KEY": "k", "Content-Type": "application/json"}

	a := e.do(t, "POST", path, body, key)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, `"status":200`)
	require.Empty(t, a.cache(), "a pass-through is not a cache answer")
	a = e.do(t, "POST", path, `{"posNo":"1"}`, key)
	require.Equal(t, http.StatusBadRequest, a.status, "the upstream's refusal, passed through")
	a = e.do(t, "POST", path, body, nil)
	require.Equal(t, http.StatusUnauthorized, a.status)
	a = e.do(t, "GET", path, "", key)
	require.Equal(t, http.StatusMethodNotAllowed, a.status)
	require.Equal(t, "POST", a.header.Get("Allow"))
	require.Equal(t, 3, s.Requests(sim.RouteSaveMerchants))

	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	a = e.do(t, "POST", path, body, key)
	requireEnvelope(t, a, http.StatusServiceUnavailable)
}

// TestStockQrFetchNotSharedAcrossCredentials: a fetch under way for a
// request without the stock API's token is not shared with a request that
// brings one (it would get the first one's refusal); requests with the
// same token share one fetch.
func TestStockQrFetchNotSharedAcrossCredentials(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	require.NoError(t, s.SetFaults(sim.Faults{Latency: 300 * time.Millisecond}))
	auth := map[string]string{"Authorization": "Bearer pos-token"}

	answers := make(chan answer, 3)
	go func() { answers <- e.do(t, "GET", stockPath, "", nil) }()
	time.Sleep(100 * time.Millisecond) // the refused fetch is under way
	for range 2 {
		go func() { answers <- e.do(t, "GET", stockPath, "", auth) }()
	}
	codes := map[int]int{}
	for range 3 {
		codes[(<-answers).status]++
	}
	require.Equal(t, map[int]int{http.StatusUnauthorized: 1, http.StatusOK: 2}, codes)
	require.Equal(t, 2, s.Requests(sim.RouteStockQr), "one fetch per set of credentials")
}

// TestSaveOprMerchantsTooLargeIs413: a body over the API's own bound (its
// http.MaxBytesReader) is 413 as for every other route, not a 400.
func TestSaveOprMerchantsTooLargeIs413(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/api/tpi/receipt/saveOprMerchants", strings.NewReader(`{"posNo":"10005299"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Body = http.MaxBytesReader(w, r.Body, 8)
	e.c.Handler().ServeHTTP(w, r)
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, w.Body.String())
	require.Zero(t, s.Requests(sim.RouteSaveMerchants))
}
