package testkit_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// The proxy forwards a plain request, tunnels a TLS one (CONNECT), records
// both, and refuses a request that is not meant for a proxy.
func TestProxyForwardsAndTunnels(t *testing.T) {
	t.Parallel()
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello "+r.URL.Path) })
	plain := httptest.NewServer(hello)
	t.Cleanup(plain.Close)
	tls := httptest.NewTLSServer(hello)
	t.Cleanup(tls.Close)
	p := testkit.StartProxy(t)
	proxyURL, err := url.Parse(p.URL)
	require.NoError(t, err)
	tr := tls.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(proxyURL)
	c := &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)

	for _, u := range []string{plain.URL + "/a", tls.URL + "/b"} {
		resp, err := c.Get(u)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, "hello "+u[strings.LastIndex(u, "/"):], string(body))
	}
	require.Equal(t, []string{"GET /a", "CONNECT " + strings.TrimPrefix(tls.URL, "https://")}, p.Requests())

	resp, err := http.Get(p.URL + "/direct")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
