package daemon

import (
	"time"

	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/snapshot"
)

// newSnapshotter builds the [backup] snapshot loop over the queue and
// feeds its state to the backup metrics. With backup.dir empty its Loop
// returns at once and the metrics leave the series out.
func (d *Daemon) newSnapshotter(m *metrics.Metrics) *snapshot.Snapshotter {
	b := d.cfg.Backup
	s := snapshot.New(snapshot.Config{Dir: b.Dir, Every: b.Every.Duration, Keep: b.Keep}, d.q, d.log)
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
