package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// LogStats reports the write-ahead log's flushes and the records they made
// durable since start. It is called on every scrape, so it must be quick
// and safe for concurrent use.
type LogStats func() (flushes, records uint64)

// WatchLog makes every scrape call f for receiptd_log_flushes_total and
// receiptd_log_records_total (records over flushes is the mean group of
// the log's group commit). A later call replaces f; nil stops watching.
func (m *Metrics) WatchLog(f LogStats) {
	if m == nil {
		return
	}
	m.log.set(f)
}

type logCollector struct {
	watched[LogStats]
	carried counters[[2]uint64] // flushes, records of the daemons before

	flushes, records *prometheus.Desc
}

var _ prometheus.Collector = (*logCollector)(nil)

func newLogCollector() *logCollector {
	return &logCollector{
		flushes: prometheus.NewDesc(namespace+"_log_flushes_total",
			"Flushes (fdatasync) of the write-ahead log since start.", nil, nil),
		records: prometheus.NewDesc(namespace+"_log_records_total",
			"Records (accepted receipts) the write-ahead log's flushes made durable since start.", nil, nil),
	}
}

func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.flushes
	ch <- c.records
}

func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	flushes, records := f()
	base := c.carried.get()
	ch <- prometheus.MustNewConstMetric(c.flushes, prometheus.CounterValue, float64(flushes+base[0]))
	ch <- prometheus.MustNewConstMetric(c.records, prometheus.CounterValue, float64(records+base[1]))
}
