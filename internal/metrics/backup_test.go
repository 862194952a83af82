package metrics

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackupSeriesReadAtScrapeTime(t *testing.T) {
	m := New()
	var mu sync.Mutex
	on, b := false, Backup{}
	m.WatchBackup(func() (Backup, bool) {
		mu.Lock()
		defer mu.Unlock()
		return b, on
	})
	require.Nil(t, scrape(t, m.Handler())["receiptd_backup_last_success_timestamp_seconds"], "no series while snapshots are off")

	mu.Lock()
	on = true
	mu.Unlock()
	fams := scrape(t, m.Handler())
	require.Equal(t, 0.0, value(t, fams, "receiptd_backup_last_success_timestamp_seconds"), "0 before the first snapshot")

	at := time.Date(2026, 11, 26, 10, 15, 0, 0, time.UTC)
	mu.Lock()
	b = Backup{LastSuccess: at, LastFailed: true, Snapshots: 4, Failures: 2, LastDuration: 1500 * time.Millisecond, LastBytes: 4096}
	mu.Unlock()
	fams = scrape(t, m.Handler())
	require.Equal(t, float64(at.Unix()), value(t, fams, "receiptd_backup_last_success_timestamp_seconds"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_backup_last_failed"))
	require.Equal(t, 4.0, value(t, fams, "receiptd_backup_snapshots_total"))
	require.Equal(t, 2.0, value(t, fams, "receiptd_backup_failures_total"))
	require.Equal(t, 1.5, value(t, fams, "receiptd_backup_last_duration_seconds"))
	require.Equal(t, 4096.0, value(t, fams, "receiptd_backup_last_size_bytes"))

	var nilM *Metrics
	require.NotPanics(t, func() { nilM.WatchBackup(func() (Backup, bool) { return Backup{}, true }) })
}
