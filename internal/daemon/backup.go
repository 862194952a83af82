package daemon

import (
	"time"

	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/metrics"
)

// newBackups builds the [backup] loop (scheduled snapshots) over the
// queue and feeds its state to the backup metrics. With backup.dir empty
// its Loop returns at once and the metrics leave the series out.
func (d *Daemon) newBackups(m *metrics.Metrics) *backup.Scheduler {
	b := d.cfg.Backup
	s := backup.New(backup.Config{Dir: b.Dir, Every: b.Every.Duration, Keep: b.Keep}, d.q, d.log)
	m.WatchBackup(func() (metrics.Backup, bool) {
		st := s.Status()
		if st.Dir == "" {
			return metrics.Backup{}, false
		}
		out := metrics.Backup{
			LastFailed: st.LastError != "", Snapshots: st.Snapshots, Failures: st.Failures,
			LastDuration: time.Duration(st.LastDurationSeconds * float64(time.Second)), LastBytes: st.LastBytes,
		}
		if st.LastSuccess != nil {
			out.LastSuccess = *st.LastSuccess
		}
		return out, true
	})
	return s
}
