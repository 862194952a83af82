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
	require.Contains(t, ready, "Ready for an outage: all 12 lookups a till needs offline are cached, and refreshed in the background")
	require.NotContains(t, ready, "Missing:")

	missing := []string{"branch_info", "info", "bank_accounts 5317878", "merchant_info 5317878",
		"merchant_info 37900846788", "merchant_info 30000000000", "classification 1"}
	cold := render(&Offline{Wanted: 7, Missing: missing})
	require.Contains(t, cold, "Not ready for an outage yet: 7 of 7 lookups")
	require.Contains(t, cold, "no warm-up has run yet")
	require.Contains(t, cold, "Missing: branch_info, info, bank_accounts 5317878, merchant_info 5317878, merchant_info 37900846788 and 2 more.")
}

// Issue 32, point 8, and issue 40, item 3: the banner counts what the
// table shows. It counts and names the kinds it lists (it said "the 13
// lookups" beside 6 names), and a kind outside the warm set with nothing cached is
// "not needed offline", not "nothing cached yet" under a "ready" banner.
func TestOfflineBannerMatchesTheTable(t *testing.T) {
	t.Parallel()
	d := upData()
	d.Cache = []CacheKind{
		{Kind: "branchInfo", Entries: 1, LastRefresh: now.Add(-time.Minute)},
		{Kind: "info", Entries: 1, LastRefresh: now.Add(-time.Minute)},
		{Kind: "stockQr"},
		{Kind: "tinInfo"},
	}
	d.Offline = &Offline{Wanted: 13, LastRun: now.Add(-time.Minute), Kinds: []string{"branchInfo", "info"}}
	page := text(renderData(t, d))
	require.Contains(t, page, "all 13 lookups a till needs offline are cached (of 2 kinds: branchInfo and info, rows of the table below)")
	require.NotContains(t, page, "Nothing cached yet")
	require.Contains(t, page, "stockQr 0 — never since start – Not needed offline: cached when the POS first asks")
	require.Contains(t, page, "tinInfo 0 — never since start – Not needed offline")
}

func renderData(t *testing.T, d Data) string {
	var b bytes.Buffer
	require.NoError(t, Render(&b, d))
	return b.String()
}
