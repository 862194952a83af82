package metrics

import (
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// QueueStats reports the queue's entry counts by state and the age of the
// oldest unsent entry (zero when nothing is unsent). It is called on every
// scrape, from the scraping goroutine, so it must be quick and safe for
// concurrent use.
type QueueStats func() (counts map[string]int, oldestUnsent time.Duration, err error)

// States are the entry states of docs/contract.md ("Entry states"). Each is
// always exported (zero when absent from the counts), so an alert on, say,
// held > 0 needs no absent(); states the callback reports beyond these are exported too.
var States = []string{
	"queued", "sending", "sent", "payment", "rejected", "held", "cancelled",
	"delete_queued", "deleted", "delete_rejected",
}

// WatchQueue makes every scrape call f for receiptd_queue_entries{state}
// and receiptd_oldest_unsent_age_seconds. A later call replaces f; nil stops
// watching. When f fails, those series are left out of that scrape and
// receiptd_queue_stats_ok is 0.
func (m *Metrics) WatchQueue(f QueueStats) {
	if m == nil {
		return
	}
	m.queue.set(f)
}

type queueCollector struct {
	watched[QueueStats]

	entries *prometheus.Desc
	oldest  *prometheus.Desc
	ok      *prometheus.Desc
}

var _ prometheus.Collector = (*queueCollector)(nil)

func newQueueCollector() *queueCollector {
	return &queueCollector{
		entries: prometheus.NewDesc(namespace+"_queue_entries",
			"Queue entries by state, read at scrape time.", []string{"state"}, nil),
		oldest: prometheus.NewDesc(namespace+"_oldest_unsent_age_seconds",
			"Age of the oldest entry not yet sent (0 when none), read at scrape time.", nil, nil),
		ok: prometheus.NewDesc(namespace+"_queue_stats_ok",
			"1 if the queue could be read for this scrape, 0 if not.", nil, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.entries
	ch <- c.oldest
	ch <- c.ok
}

// Collect emits nothing while no callback is set: no data is not "empty".
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	counts, oldest, err := f()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.ok, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.ok, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, max(oldest, 0).Seconds())

	seen := make(map[string]bool, len(States)+len(counts))
	for _, s := range States {
		seen[s] = true
		ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(counts[s]), s)
	}
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		if v := labelValue(s); !seen[v] {
			seen[v] = true
			ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(counts[s]), v)
		}
	}
}
