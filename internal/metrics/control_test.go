package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestControlSeriesReadAtScrapeTime(t *testing.T) {
	m := New()
	require.Nil(t, scrape(t, m.Handler())["receiptd_control_connected"], "no series while [control] is off")

	require.NoError(t, m.WatchControl(func() (bool, float64, uint64) { return false, 0, 0 }))
	fams := scrape(t, m.Handler())
	require.Equal(t, 0.0, value(t, fams, "receiptd_control_connected"))
	require.Equal(t, 0.0, value(t, fams, "receiptd_control_last_contact_timestamp_seconds"), "0 before the first contact")

	// A daemon restarted in place watches again: the series follow the new
	// function, and registering twice is no error.
	require.NoError(t, m.WatchControl(func() (bool, float64, uint64) { return true, 1764236100, 3 }))
	fams = scrape(t, m.Handler())
	require.Equal(t, 1.0, value(t, fams, "receiptd_control_connected"))
	require.Equal(t, 1764236100.0, value(t, fams, "receiptd_control_last_contact_timestamp_seconds"))
	require.Equal(t, 3.0, value(t, fams, "receiptd_control_remote_config_failures_total"))

	var nilM *Metrics
	require.NoError(t, nilM.WatchControl(nil))
}
