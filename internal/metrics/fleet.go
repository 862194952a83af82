package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// FleetStats reports the push to the head office (internal/fleet): when a
// push last succeeded (Unix seconds, 0 for never), the samples waiting on
// disk, and the unsent samples dropped so far. It is called on every
// scrape and every push sample, so it must be quick and safe for
// concurrent use.
type FleetStats func() (lastSuccess float64, buffered, dropped uint64)

// WatchFleet registers, once, the push's series:
// receiptd_fleet_last_success_timestamp_seconds, receiptd_fleet_buffered_samples
// and receiptd_fleet_dropped_samples_total, read from f; a later call
// replaces f (a daemon restarted in place, see Unwatch). They exist only
// while the push is on, so a till that does not push has no stale "last
// success". On a nil *Metrics it does nothing.
func (m *Metrics) WatchFleet(f FleetStats) error {
	if m == nil {
		return nil
	}
	m.fleetOnce.Do(func() { m.fleetErr = m.Register(m.fleet) })
	m.fleet.set(f)
	return m.fleetErr
}

func newFleetCollector() *fleetCollector {
	return &fleetCollector{
		lastSuccess: prometheus.NewDesc(namespace+"_fleet_last_success_timestamp_seconds",
			"When the head office last accepted pushed samples (Unix seconds); 0 until the first success since start.", nil, nil),
		buffered: prometheus.NewDesc(namespace+"_fleet_buffered_samples",
			"Samples waiting on disk for the head office to accept them.", nil, nil),
		dropped: prometheus.NewDesc(namespace+"_fleet_dropped_samples_total",
			"Unsent samples dropped: past fleet.buffer or fleet.buffer_mb, refused by the head office (4xx), or damaged on disk.", nil, nil),
	}
}

// SetBuildInfo registers receiptd_build_info{version} 1. Its sample
// times tell a head office when a till was last heard from, pushed or
// scraped. A second call with the same version does nothing (a daemon
// restarted in place); with another it fails. On a nil *Metrics it does
// nothing.
func (m *Metrics) SetBuildInfo(version string) error {
	if m == nil {
		return nil
	}
	m.buildMu.Lock()
	defer m.buildMu.Unlock()
	if m.buildVersion != "" {
		if m.buildVersion == version {
			return nil
		}
		return fmt.Errorf("build_info is already set, to version %q", m.buildVersion)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help:        "Always 1; the version label is receiptd's version.",
		ConstLabels: prometheus.Labels{"version": labelValue(version)},
	})
	g.Set(1)
	if err := m.reg.Register(g); err != nil {
		return err
	}
	m.buildVersion = version
	return nil
}

// Gather collects the registry, as a scrape of /metrics does. It is what
// the push samples.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	if m == nil {
		return nil, errors.New("metrics are disabled")
	}
	return m.reg.Gather()
}

type fleetCollector struct {
	watched[FleetStats]
	carried counters[uint64] // dropped by the daemons before

	lastSuccess, buffered, dropped *prometheus.Desc
}

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lastSuccess
	ch <- c.buffered
	ch <- c.dropped
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	last, buffered, dropped := f()
	ch <- prometheus.MustNewConstMetric(c.lastSuccess, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(c.buffered, prometheus.GaugeValue, float64(buffered))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(dropped+c.carried.get()))
}
