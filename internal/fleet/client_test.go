package fleet_test

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/fleet"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestNewClientTrustsItsCAThroughItsProxy: the push's client reaches a
// head office whose certificate only fleet.ca_file vouches for, through
// fleet.proxy, and refuses it without the CA file.
func TestNewClientTrustsItsCAThroughItsProxy(t *testing.T) {
	t.Parallel()
	head := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(head.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: head.TLS.Certificates[0].Certificate[0]})
	require.NoError(t, os.WriteFile(caFile, cert, 0o600))
	proxy := testkit.StartProxy(t)

	hc, err := fleet.NewClient(fleet.ClientOptions{CAFile: caFile, Proxy: proxy.URL, Timeout: 30 * time.Second})
	require.NoError(t, err)
	resp, err := hc.Post(head.URL+"/api/v1/write", "application/x-protobuf", strings.NewReader("x"))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, []string{"CONNECT " + head.Listener.Addr().String()}, proxy.Requests())

	hc, err = fleet.NewClient(fleet.ClientOptions{Proxy: proxy.URL, Timeout: 30 * time.Second})
	require.NoError(t, err)
	_, err = hc.Post(head.URL+"/api/v1/write", "application/x-protobuf", strings.NewReader("x"))
	require.ErrorContains(t, err, "certificate", "without the CA file the head office is not trusted")

	_, err = fleet.NewClient(fleet.ClientOptions{CAFile: filepath.Join(t.TempDir(), "missing.pem")})
	require.ErrorContains(t, err, "fleet: client: CA file")
	_, err = fleet.NewClient(fleet.ClientOptions{Proxy: "ftp://proxy"})
	require.ErrorContains(t, err, "fleet: client: proxy")
}
