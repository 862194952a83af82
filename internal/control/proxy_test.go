package control_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestClientThroughProxy: control.proxy carries both transports (CONNECT
// for the WebSocket, absolute-URL requests for HTTP polling).
func TestClientThroughProxy(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			proxy := testkit.StartProxy(t)
			tl := startTillWith(t, tr.url(srv), fmt.Sprintf("proxy = %q", proxy.URL))
			agent(t, srv, tl.client.InstanceUID(), func(a controltest.Agent) bool { return a.Description != nil })
			require.NotEmpty(t, proxy.Requests(), "the connection went through the proxy")
		})
	}
}

// Environment of TestClientUsesTheEnvironmentsProxy's child process.
const (
	envProxyChild = "RECEIPTD_TEST_ENV_PROXY" // "through" or "around": what the child requires
	envProxyURLs  = "RECEIPTD_TEST_ENV_PROXY_URLS"
	envProxyCA    = "RECEIPTD_TEST_ENV_PROXY_CA"
)

// TestClientUsesTheEnvironmentsProxy: with control.proxy empty, both
// transports go through HTTPS_PROXY, and not for a host NO_PROXY names,
// as docs/contract.md promises. The head office is reached by a name
// only the proxy knows (testkit.Proxy.Route): a till that connects went
// through it. net/http reads the environment once per process and never
// proxies a loopback address, so the till runs in a child process of this
// test, started with the variables set.
func TestClientUsesTheEnvironmentsProxy(t *testing.T) {
	if mode := os.Getenv(envProxyChild); mode != "" {
		for _, url := range strings.Fields(os.Getenv(envProxyURLs)) {
			tl := startTillWith(t, url, fmt.Sprintf("ca_file = %q", os.Getenv(envProxyCA)))
			connected := func() bool { return tl.client.Status().Connected }
			if mode == "through" {
				require.Eventually(t, connected, 20*time.Second, 20*time.Millisecond, "%s through HTTPS_PROXY", url)
			} else {
				require.Never(t, connected, 3*time.Second, 50*time.Millisecond, "%s: NO_PROXY names it, and only the proxy knows it", url)
			}
		}
		return
	}
	srv, caFile := controltest.StartTLS(t)
	proxy := testkit.StartProxy(t)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimSuffix(srv.WSURL(), "/v1/opamp"), "wss://"))
	require.NoError(t, err)
	host := net.JoinHostPort(controltest.TLSHost, port)
	proxy.Route(host, net.JoinHostPort("127.0.0.1", port))
	urls := "wss://" + host + "/v1/opamp https://" + host + "/v1/opamp"
	child := func(mode, noProxy string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestClientUsesTheEnvironmentsProxy$", "-test.count=1", "-test.v")
		for _, kv := range os.Environ() {
			if name, _, _ := strings.Cut(kv, "="); !strings.HasSuffix(strings.ToLower(name), "_proxy") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, envProxyChild+"="+mode, envProxyURLs+"="+urls, envProxyCA+"="+caFile,
			"HTTPS_PROXY="+proxy.URL, "NO_PROXY="+noProxy)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the till in the child process (%s):\n%s", mode, out)
	}

	child("around", controltest.TLSHost)
	require.Empty(t, proxy.Requests(), "NO_PROXY names the head office: the proxy is not asked")
	child("through", "")
	require.Contains(t, proxy.Requests(), "CONNECT "+host)
	require.Equal(t, 2, srv.Count(func(controltest.Agent) bool { return true }), "both tills reached the head office")
}
