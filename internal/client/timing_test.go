package client_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestOnTimingSeesTheServiceClock: every answer's Date header, and a
// create answer's date, reach Config.OnTiming with our clock around the
// exchange, whatever the answer said.
func TestOnTimingSeesTheServiceClock(t *testing.T) {
	s := testkit.StartSim(t, sim.Options{Seed: 9})
	require.NoError(t, s.SetFaults(sim.Faults{ClockSkew: -3 * time.Minute}))
	var mu sync.Mutex
	var got []client.Timing
	c, err := client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: s.URL(), Timeout: 5 * time.Second,
		OnTiming: func(tm client.Timing) {
			mu.Lock()
			got = append(got, tm)
			mu.Unlock()
		}})
	require.NoError(t, err)
	ctx := context.Background()

	_, err = c.Info(ctx)
	require.NoError(t, err)
	_, err = c.BranchInfo(ctx)
	require.NoError(t, err)
	_, err = c.CreateReceipt(ctx, []byte(testkit.Receipt("T00001")))
	require.NoError(t, err)
	require.NoError(t, s.SetFaults(sim.Faults{RejectNext: 1, ClockSkew: -3 * time.Minute}))
	_, err = c.CreateReceipt(ctx, []byte(testkit.Receipt("T00002")))
	require.Error(t, err, "a refusal still tells its timing")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 4)
	for i, op := range []client.Op{client.OpInfo, client.OpBranchInfo, client.OpCreateReceipt, client.OpCreateReceipt} {
		tm := got[i]
		require.Equal(t, op, tm.Op)
		require.False(t, tm.Received.Before(tm.Sent))
		theirs, err := http.ParseTime(tm.Date)
		require.NoError(t, err, "Date header %q", tm.Date)
		skew := theirs.Sub(tm.Sent)
		require.InDelta(t, (-3 * time.Minute).Seconds(), skew.Seconds(), 2, "answer %d: %s", i, tm.Date)
	}
	require.Empty(t, got[0].ReceiptDate)
	d, err := client.ParseTime(got[2].ReceiptDate)
	require.NoError(t, err)
	require.InDelta(t, (-3 * time.Minute).Seconds(), d.Sub(got[2].Sent).Seconds(), 2)
	require.Empty(t, got[3].ReceiptDate, "a refusal has no date")
}
