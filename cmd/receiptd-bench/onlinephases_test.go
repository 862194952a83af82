package main

import (
	"bytes"
	"runtime/trace"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/syncer"
)

// TestOnlinePhasesTellsTheTwoPaths traces two sales as the daemon marks
// them, one sent by the request that accepted it and one whose attempt
// ran on another goroutine, and one sale that was never answered; the
// table counts each answered sale once, on its path, and the slowest
// 1% (here one sale) apart.
func TestOnlinePhasesTellsTheTwoPaths(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, trace.Start(&buf))
	sale := func(id string, marks ...string) {
		for _, m := range marks {
			syncer.TracePhase(m, id)
		}
	}
	apart := func(id string, marks ...string) {
		done := make(chan struct{})
		go func() { defer close(done); sale(id, marks...) }()
		<-done
	}
	syncer.TracePhase("request", "")
	sale("Q1", "enqueued", "claimed", "send", "answer", "recorded", "published", "awaited", "answered")
	syncer.TracePhase("request", "")
	sale("Q2", "enqueued")
	apart("Q2", "claimed", "send", "answer", "recorded", "published")
	sale("Q2", "awaited", "answered")
	syncer.TracePhase("request", "")
	sale("Q3", "enqueued", "claimed", "send")
	trace.Stop()

	p, err := readOnlinePhases(&buf)
	require.NoError(t, err)
	require.Equal(t, 2, p.sales, "the two answered sales")
	require.Len(t, p.here, 1, "Q1, sent by its own request")
	require.Len(t, p.goroutine, 1, "Q2, sent from another goroutine")
	require.Equal(t, 1, p.slowSales, "the slowest 1%: at least one sale")
	require.Equal(t, max(p.here[0], p.goroutine[0]), p.slowHandler, "the slowest sale")
	var out bytes.Buffer
	p.print(&out, 0)
	require.Contains(t, out.String(), "sent by the request that accepted it:")
	require.Contains(t, out.String(), "sent from a goroutine")
}
