package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// AnswerStats reports how many upstream answers the sync worker holds in
// memory and their size in bytes. It is called on every scrape, so it must
// be quick and safe for concurrent use.
type AnswerStats func() (count int, bytes int64)

// WatchAnswers makes every scrape call f for receiptd_answers_held and
// receiptd_answers_held_bytes. A later call replaces f; nil stops watching.
func (m *Metrics) WatchAnswers(f AnswerStats) {
	if m == nil {
		return
	}
	m.answers.set(f)
}

// AnswerDropped counts an answer no POS had received that the memory bounds
// pushed out (receiptd_answers_dropped_total).
func (m *Metrics) AnswerDropped() {
	if m == nil {
		return
	}
	m.answersDropped.Inc()
}

type answersCollector struct {
	watched[AnswerStats]

	count, bytes *prometheus.Desc
}

var _ prometheus.Collector = (*answersCollector)(nil)

func newAnswersCollector() *answersCollector {
	return &answersCollector{
		count: prometheus.NewDesc(namespace+"_answers_held",
			"Upstream answers (and markers of failed attempts) held in memory for waiting requests, replays and the late-answer route.", nil, nil),
		bytes: prometheus.NewDesc(namespace+"_answers_held_bytes",
			"Size of the answers held in memory, as counted against accept.answer_mb.", nil, nil),
	}
}

func (c *answersCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.bytes
}

func (c *answersCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	n, b := f()
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(b))
}
