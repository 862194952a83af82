package metrics

import "github.com/prometheus/client_golang/prometheus"

// ControlStats reports the OpAMP channel to the head office
// (internal/control): whether the server answers, when it last did (Unix
// seconds, 0 for not since start), and the remote configs refused or
// rolled back since start. It is called on every scrape and every push
// sample, so it must be quick and safe for concurrent use.
type ControlStats func() (connected bool, lastContact float64, failures uint64)

// WatchControl registers, once, the channel's series:
// receiptd_control_connected, receiptd_control_last_contact_timestamp_seconds
// and receiptd_control_remote_config_failures_total, read from f; a later
// call replaces f (a daemon restarted in place keeps its series). They
// exist only while [control] is on. On a nil *Metrics it does nothing.
func (m *Metrics) WatchControl(f ControlStats) error {
	if m == nil {
		return nil
	}
	m.controlOnce.Do(func() { m.controlErr = m.Register(m.control) })
	m.control.set(f)
	return m.controlErr
}

func newControlCollector() *controlCollector {
	return &controlCollector{
		connected: prometheus.NewDesc(namespace+"_control_connected",
			"1 when the head office's OpAMP server answered within three control.poll_every, else 0.", nil, nil),
		lastContact: prometheus.NewDesc(namespace+"_control_last_contact_timestamp_seconds",
			"When the head office's OpAMP server last answered (Unix seconds); 0 until it has since start.", nil, nil),
		failures: prometheus.NewDesc(namespace+"_control_remote_config_failures_total",
			"Remote configs refused (they did not validate, or set keys outside control.allow) or rolled back since start.", nil, nil),
	}
}

type controlCollector struct {
	watched[ControlStats]

	connected, lastContact, failures *prometheus.Desc
}

func (c *controlCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.connected
	ch <- c.lastContact
	ch <- c.failures
}

func (c *controlCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	connected, last, failures := f()
	up := 0.0
	if connected {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.lastContact, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(failures))
}
