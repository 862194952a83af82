package control_test

import (
	"fmt"
	"testing"

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
