package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// watchDaemon watches m as one daemon's components would, each counter at n.
func watchDaemon(t *testing.T, m *Metrics, n uint64) {
	t.Helper()
	m.WatchQueue(nil)
	m.WatchLog(func() (uint64, uint64) { return n, 10 * n })
	m.WatchBackup(func() (Backup, bool) { return Backup{Snapshots: n, Failures: 2 * n}, true })
	require.NoError(t, m.WatchFleet(func() (float64, uint64, uint64) { return 0, 0, n }))
	m.WatchPosAPI(func() PosAPIStats { return PosAPIStats{PosAPI: "pos:1", SendDataOK: n, SendDataFailed: 3 * n} })
	require.NoError(t, m.WatchControl(func() (bool, float64, uint64) { return true, 0, 0 }))
	require.NoError(t, m.SetBuildInfo("v1"))
}

// TestUnwatchCarriesComponentCounters: one Metrics serves the daemons a
// Supervisor runs one after the other; the counters a component reports
// since it started go on across them instead of restarting from zero.
func TestUnwatchCarriesComponentCounters(t *testing.T) {
	m := New()
	m.SendAttempt("receipt", "success", 0)
	watchDaemon(t, m, 5)
	m.Unwatch()
	fams := scrape(t, m.Handler())
	require.Nil(t, fams["receiptd_log_records_total"], "the stopped daemon is no longer read")
	require.Nil(t, fams["receiptd_backup_snapshots_total"])
	require.Nil(t, fams["receiptd_control_connected"])

	watchDaemon(t, m, 1) // the next daemon's components start from zero
	fams = scrape(t, m.Handler())
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"receiptd_log_flushes_total", nil, 6},
		{"receiptd_log_records_total", nil, 60},
		{"receiptd_backup_snapshots_total", nil, 6},
		{"receiptd_backup_failures_total", nil, 12},
		{"receiptd_fleet_dropped_samples_total", nil, 6},
		{"receiptd_send_data_total", []string{"posapi", "pos:1", "result", "ok"}, 6},
		{"receiptd_send_data_total", []string{"posapi", "pos:1", "result", "failed"}, 18},
		{"receiptd_send_attempts_total", []string{"kind", "receipt", "outcome", "success"}, 1},
		{"receiptd_build_info", []string{"version", "v1"}, 1},
	} {
		require.Equal(t, tc.want, value(t, fams, tc.name, tc.labels...), tc.name)
	}
	require.Error(t, m.SetBuildInfo("v2"), "one version per process")
	var nilM *Metrics
	require.NotPanics(t, nilM.Unwatch)
	require.NotPanics(t, New().Unwatch, "nothing watched yet")
}
