package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Backup is the snapshot loop's state ([backup]) for the backup series:
//
//	backup_last_success_timestamp_seconds  gauge    unix time of the newest good snapshot since start; 0 before one
//	backup_last_failed                     gauge    1 when the last snapshot failed (deleted, reported), 0 otherwise
//	backup_snapshots_total                 counter  good snapshots since start
//	backup_failures_total                  counter  failed snapshots since start
//	backup_last_duration_seconds           gauge    writing and checking the newest good snapshot
//	backup_last_size_bytes                 gauge    its size
//
// The series are there only while snapshots are on (backup.dir set), so a
// rule on the last success's age does not fire on a till without them.
type Backup struct {
	LastSuccess         time.Time
	LastFailed          bool
	Snapshots, Failures uint64
	LastDuration        time.Duration
	LastBytes           int64
}

// BackupState returns the snapshot loop's state; ok false means
// snapshots are off. It is called on every scrape, so it must be quick and
// safe for concurrent use.
type BackupState func() (b Backup, ok bool)

// WatchBackup makes every scrape call f for the backup series. The
// first call registers them; a later call replaces f (a daemon restarted
// in place, see Unwatch). On a nil *Metrics it does nothing.
func (m *Metrics) WatchBackup(f BackupState) {
	if m == nil {
		return
	}
	m.backupOnce.Do(func() { m.reg.MustRegister(m.backup) })
	m.backup.set(f)
}

type backupCollector struct {
	watched[BackupState]
	carried counters[[2]uint64] // snapshots, failures of the daemons before

	lastSuccess, lastFailed, snapshots, failures, duration, size *prometheus.Desc
}

func newBackupCollector() *backupCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_backup_"+name, help, nil, nil)
	}
	return &backupCollector{
		lastSuccess: d("last_success_timestamp_seconds", "Unix time of the newest snapshot that was written and passed its check since start; 0 before one."),
		lastFailed:  d("last_failed", "1 when the last snapshot failed (it was deleted; see /receiptd/status backup.lastError), 0 otherwise."),
		snapshots:   d("snapshots_total", "Snapshots written and checked since start."),
		failures:    d("failures_total", "Snapshots that failed (to be written, or their check) since start."),
		duration:    d("last_duration_seconds", "Time taken to write and check the newest good snapshot."),
		size:        d("last_size_bytes", "Size of the newest good snapshot."),
	}
}

func (c *backupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lastSuccess, c.lastFailed, c.snapshots, c.failures, c.duration, c.size} {
		ch <- d
	}
}

func (c *backupCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	b, ok := f()
	if !ok {
		return
	}
	var last float64
	if !b.LastSuccess.IsZero() {
		last = float64(b.LastSuccess.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(c.lastFailed, prometheus.GaugeValue, gauge(b.LastFailed))
	base := c.carried.get()
	ch <- prometheus.MustNewConstMetric(c.snapshots, prometheus.CounterValue, float64(b.Snapshots+base[0]))
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(b.Failures+base[1]))
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, b.LastDuration.Seconds())
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(b.LastBytes))
}
