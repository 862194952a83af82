package daemon

import (
	"fmt"
	"os"
	"time"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/fleet"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/posapi"
)

// newFleet builds the push to the head office when [fleet] turns it on
// (nil otherwise), going on from the last success of the push before it
// to the same URL (c, nil: none), and registers its series. It starts
// nothing.
func (d *Daemon) newFleet(m *metrics.Metrics, c *carried) error {
	f := d.cfg.Fleet
	if !f.Enabled() {
		return nil
	}
	client, err := fleet.NewClient(fleet.ClientOptions{CAFile: f.CAFile, Proxy: f.Proxy,
		Timeout: fleetTimeout(f.Interval.Duration)})
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	host, _ := os.Hostname() // an unknown host name leaves instance to [fleet.labels]
	d.fleet, err = fleet.New(fleet.Config{
		URL: f.RemoteWriteURL, Interval: f.Interval.Duration, Labels: f.Labels, Instance: host,
		Headers: config.RevealAll(f.Headers), Client: client, Dir: layout.Fleet(d.cfg.DataDir),
		Buffer: f.Buffer.Duration, BufferBytes: int64(f.BufferMB) << 20,
		LastSuccess: c.fleetSuccess(f.RemoteWriteURL),
	}, m, d.log)
	if err != nil {
		return err
	}
	return m.WatchFleet(func() (float64, uint64, uint64) {
		s := d.fleet.Status()
		last := 0.0
		if !s.LastSuccess.IsZero() {
			last = float64(s.LastSuccess.UnixNano()) / 1e9
		}
		return last, s.BufferedSamples, s.Dropped
	})
}

// fleetTimeout bounds one push: long enough for a slow link to carry a
// catch-up request, short enough that a hung head office is retried.
func fleetTimeout(interval time.Duration) time.Duration {
	return min(max(interval, 10*time.Second), 60*time.Second)
}

// fleetState is what /receiptd/status and the status page show of the
// push; disabled when it is off.
func (d *Daemon) fleetState() api.FleetState {
	s := d.fleet.Status()
	return api.FleetState{Enabled: s.Enabled, LastSuccess: s.LastSuccess, BufferedSamples: s.BufferedSamples,
		OldestBuffered: s.OldestBuffered, DroppedSamples: s.Dropped, LastError: s.LastError, FailingSince: s.FailingSince}
}

// carried is what a stopped Daemon hands the one a Supervisor builds in
// its place (carry), besides what is on disk: PosAPI's watcher's memory
// (the last /rest/info read, receiptd's last sendData), and the fleet
// push's last success. The fleet buffer's position is its cursor file.
type carried struct {
	posapi   posapi.Memory
	fleetURL string
	fleetOK  time.Time
}

// carry is what d knew, for the Daemon built in its place. Call it once
// d's Run has returned.
func (d *Daemon) carry() *carried {
	c := &carried{posapi: d.posapi.Memory()}
	if d.fleet != nil {
		c.fleetURL, c.fleetOK = d.cfg.Fleet.RemoteWriteURL, d.fleet.Status().LastSuccess
	}
	return c
}

// fleetSuccess is the carried push's last success when it pushed to url.
func (c *carried) fleetSuccess(url string) time.Time {
	if c == nil || c.fleetURL != url {
		return time.Time{}
	}
	return c.fleetOK
}
