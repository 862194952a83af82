package cache

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestWarmthNamesWhatIsMissing: with the tax service down from the start,
// the warm set is the first round, all missing; once it is reachable,
// Run fills the whole set, the second round (bank accounts and merchant
// info of /rest/info's TINs, the classification's second level) included.
func TestWarmthNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	w := e.c.Warmth()
	require.Equal(t, 4, w.Wanted)
	require.Equal(t, []string{"branch_info", "product_tax_code", "info", "classification"}, w.Missing)
	require.True(t, w.LastRun.IsZero())

	runCache(t, e.c)
	require.Eventually(t, func() bool { return !e.c.Warmth().LastRun.IsZero() }, 5*time.Second, 5*time.Millisecond)
	require.Len(t, e.c.Warmth().Missing, 4, "down: nothing fetched")

	require.NoError(t, s.SetFaults(sim.Faults{}))
	e.c.NoteTIN("2012345") // wakes the warm-up
	require.Eventually(t, func() bool { w = e.c.Warmth(); return len(w.Missing) == 0 }, 5*time.Second, 5*time.Millisecond)
	require.Greater(t, w.Wanted, 10)
	require.Equal(t, 2, s.Requests(sim.RouteBankAccounts), "the two merchants of /rest/info")
	require.True(t, e.c.indexed(lookup{op: "bank_accounts", param: sim.SampleMerchantTin}.key()))
	require.True(t, e.c.indexed(lookup{op: "merchant_info", param: "30000000000"}.key()), "a customer of /rest/info")
}

// TestWarmUpLogsAnOutageOnce: offline is the normal case, and a failed
// warm-up is retried every 30 s; the log says so once when it starts
// failing and once when it is complete again, not on every round.
func TestWarmUpLogsAnOutageOnce(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	core, logs := observer.New(zap.InfoLevel)
	c, err := New(context.Background(), openStore(t), newClient(t, s.URL()), Config{}, zap.New(core), nil)
	require.NoError(t, err)
	for range 3 {
		require.False(t, c.warmUp(context.Background()))
	}
	require.Equal(t, 1, logs.FilterMessageSnippet("warm-up incomplete").Len(), "one line for the outage")

	require.NoError(t, s.SetFaults(sim.Faults{}))
	c.mu.Lock()
	c.lookupDown, c.posDown = downState{}, downState{} // the known-down windows would wait a minute
	c.mu.Unlock()
	require.True(t, c.warmUp(context.Background()))
	require.True(t, c.warmUp(context.Background()))
	require.Equal(t, 1, logs.FilterMessageSnippet("warm-up complete").Len(), "one line when it recovers")
	require.Equal(t, 1, logs.FilterMessageSnippet("warm-up incomplete").Len())
}
