package demo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/sim"
)

// Issue 40: the demo's outage leaves the other faults alone. README's demo
// walkthrough asks the simulator to refuse the next receipt; an outage
// that replaced every fault cleared that rejection before it happened.
func TestOutageKeepsTheOtherFaults(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Options{Seed: 1})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	before := sim.Faults{RejectNext: 1, RejectMessage: "merchantTin: not registered", SendDataFail: true, ClockSkew: -5 * time.Minute}
	require.NoError(t, s.SetFaults(before))

	// The daemon, as far as the script sees it: the receipt posted during
	// the outage is queued, then sent.
	mux := http.NewServeMux()
	during := make(chan sim.Faults, 1) // the faults when the receipt was posted
	mux.HandleFunc("POST /rest/receipt", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case during <- s.Faults():
		default:
		}
		w.Header().Set("X-Queue-Id", "Q000000000001")
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("GET /receiptd/entries/Q000000000001", func(w http.ResponseWriter, _ *http.Request) {
		if s.Faults().Down {
			_, _ = w.Write([]byte(`{"queueId":"Q000000000001","state":"queued"}`))
			return
		}
		_, _ = w.Write([]byte(`{"queueId":"Q000000000001","state":"sent","outcome":{"id":"1"}}`))
	})
	daemon := httptest.NewServer(mux)
	t.Cleanup(daemon.Close)

	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := &apiclient.Client{Base: daemon.URL, HTTP: demoHTTP}
	outageLoop(ctx, zap.New(core), s, c, Options{Outage: 1500 * time.Millisecond})
	require.Len(t, logs.FilterMessageSnippet("recovered: the receipt queued during the outage was sent").All(), 1, "%v", logs.All())

	require.Equal(t, sim.Faults{Down: true, DownFor: 1500 * time.Millisecond, RejectNext: 1,
		RejectMessage: "merchantTin: not registered", SendDataFail: true, ClockSkew: -5 * time.Minute}, <-during)
	require.Equal(t, before, s.Faults(), "after the outage, what was asked for before it")
}
