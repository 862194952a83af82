package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUpdateSeries: the update series follow what the watched function
// reads from update.json at each scrape: the running version as info and
// as a number, one state series per phase with the current one at 1, and
// the rollbacks and refusals as counters; an unreadable state leaves
// them out.
func TestUpdateSeries(t *testing.T) {
	m := New()
	require.Nil(t, scrape(t, m.Handler())["receiptd_update_state"], "nothing before a daemon watches")

	u, ok := Update{Running: "1.4.0", Phase: "rolled_back", Rollbacks: 2, Refusals: 3}, true
	m.WatchUpdate(func() (Update, bool) { return u, ok })
	fams := scrape(t, m.Handler())
	require.Equal(t, 1.0, value(t, fams, "receiptd_update_running_info", "version", "1.4.0"))
	require.Equal(t, 1004000.0, value(t, fams, "receiptd_update_running_version_number"))
	require.Equal(t, 2.0, value(t, fams, "receiptd_update_rollbacks_total"))
	require.Equal(t, 3.0, value(t, fams, "receiptd_update_refusals_total"))
	require.Len(t, fams["receiptd_update_state"].GetMetric(), len(UpdatePhases))
	for _, p := range UpdatePhases {
		want := 0.0
		if p == "rolled_back" {
			want = 1
		}
		require.Equal(t, want, value(t, fams, "receiptd_update_state", "state", p), p)
	}

	// The next scrape reads the file again: a new refusal counts, and a
	// build from source has no version number to compare.
	u = Update{Running: "dev", Phase: "refused", Rollbacks: 2, Refusals: 4}
	fams = scrape(t, m.Handler())
	require.Equal(t, 4.0, value(t, fams, "receiptd_update_refusals_total"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_update_state", "state", "refused"))
	require.Equal(t, 0.0, value(t, fams, "receiptd_update_state", "state", "rolled_back"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_update_running_info", "version", "dev"))
	require.Nil(t, fams["receiptd_update_running_version_number"])

	ok = false
	fams = scrape(t, m.Handler())
	require.Nil(t, fams["receiptd_update_rollbacks_total"], "a state that cannot be read is left out, never guessed")

	var nilM *Metrics
	require.NotPanics(t, func() { nilM.WatchUpdate(nil) })
}

// TestVersionNumberOrdersReleases: the number orders versions as
// semantic versioning does (a pre-release below its release, above the
// release before), and refuses what it cannot order.
func TestVersionNumberOrdersReleases(t *testing.T) {
	ordered := []string{"0.9.9", "1.0.0", "1.0.1", "1.1.0-rc.1", "1.1.0", "v1.1.1+build.7", "1.10.0", "2.0.0-alpha", "2.0.0", "999.999.999"}
	var last float64 = -1
	for _, v := range ordered {
		n, ok := versionNumber(v)
		require.True(t, ok, v)
		require.Greater(t, n, last, v)
		last = n
	}
	n, _ := versionNumber("1.2.3")
	require.Equal(t, 1002003.0, n)
	for _, bad := range []string{"", "dev", "1.2", "1.2.3.4", "1.02.3", "1.2.-3", "1.2.+3", "1.2.3-", "1000.0.0", "1.2.x"} {
		_, ok := versionNumber(bad)
		require.False(t, ok, "%q", bad)
	}
}
