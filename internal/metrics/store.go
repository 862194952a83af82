package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// StoreHealth reports whether the database's last write could not grow the
// file (diskFull) and whether it refuses every write until receiptd
// restarts (failed: a failed commit, or the file moved or replaced). It is
// called on every scrape, so it must be quick and safe for concurrent use.
type StoreHealth func() (diskFull, failed bool)

// WatchStore makes every scrape call f for receiptd_store_disk_full and
// receiptd_store_failed. A later call replaces f; nil stops watching (the
// series are then left out).
func (m *Metrics) WatchStore(f StoreHealth) {
	if m == nil {
		return
	}
	m.store.set(f)
}

type storeCollector struct {
	watched[StoreHealth]

	diskFull, failed *prometheus.Desc
}

var _ prometheus.Collector = (*storeCollector)(nil)

func newStoreCollector() *storeCollector {
	return &storeCollector{
		diskFull: prometheus.NewDesc(namespace+"_store_disk_full",
			"1 while the database's last write failed because the file could not grow (disk full), 0 otherwise.", nil, nil),
		failed: prometheus.NewDesc(namespace+"_store_failed",
			"1 when the database refuses every write until receiptd restarts (a failed commit, or the file moved or replaced), 0 otherwise.", nil, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.diskFull
	ch <- c.failed
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	full, failed := f()
	ch <- prometheus.MustNewConstMetric(c.diskFull, prometheus.GaugeValue, gauge(full))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, gauge(failed))
}

func gauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
