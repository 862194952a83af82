package statuspage

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOfflineBlock: the page says whether the till is ready for an outage,
// names what is missing (at most five, then a count), and leaves the block
// out when the cache's warmth is not known.
func TestOfflineBlock(t *testing.T) {
	t.Parallel()
	render := func(o *Offline) string {
		d := upData()
		d.Offline = o
		var b bytes.Buffer
		require.NoError(t, Render(&b, d))
		return b.String()
	}
	require.NotContains(t, render(nil), `id="offline"`)

	ready := render(&Offline{Wanted: 12, LastRun: now.Add(-2 * time.Minute)})
	require.Contains(t, ready, "Ready for an outage: all 12 lookups a till needs offline are cached")
	require.NotContains(t, ready, "Missing:")

	missing := []string{"branch_info", "info", "bank_accounts 5317878", "merchant_info 5317878",
		"merchant_info 37900846788", "merchant_info 30000000000", "classification 1"}
	cold := render(&Offline{Wanted: 7, Missing: missing})
	require.Contains(t, cold, "Not ready for an outage yet: 7 of 7 lookups")
	require.Contains(t, cold, "no warm-up has run yet")
	require.Contains(t, cold, "Missing: branch_info, info, bank_accounts 5317878, merchant_info 5317878, merchant_info 37900846788 and 2 more.")
}
