package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// UpdatePhases are the phases of update.json (package release), in its
// order: receiptd_update_state has one series for each, 1 for the
// phase the update is in and 0 for the others, so a rule or a panel
// selects a phase without knowing which ones exist.
var UpdatePhases = []string{"idle", "verifying", "staged", "switching", "probation", "installed", "rolled_back", "refused"}

// Update is what the update series report (issue 39, docs/contract.md
// "Updating the fleet"):
//
//	update_running_info{version}      gauge    1; the version answering (this process's)
//	update_running_version_number     gauge    that version as a number that orders releases (versionNumber)
//	update_state{state}               gauge    1 for update.json's phase, 0 for the others
//	update_rollbacks_total            counter  releases rolled back on this till, for good (update.json)
//	update_refusals_total             counter  offers refused on this till, for good (update.json)
//
// Both counters are read from update.json, which keeps them for good: they
// never go down across restarts, and Unwatch does not carry them.
type Update struct {
	Running             string
	Phase               string
	Rollbacks, Refusals uint64
}

// UpdateState reads the update's state; ok false means it cannot be
// read (a damaged update.json): the series are left out rather than
// guessed. It is called on every scrape and every push sample, so it must
// be quick and safe for concurrent use.
type UpdateState func() (u Update, ok bool)

// WatchUpdate makes every scrape call f for the update series. The first
// call registers them; a later call replaces f (a daemon restarted in
// place, see Unwatch). On a nil *Metrics it does nothing.
func (m *Metrics) WatchUpdate(f UpdateState) {
	if m == nil {
		return
	}
	m.updateOnce.Do(func() { m.reg.MustRegister(m.update) })
	m.update.set(f)
}

type updateCollector struct {
	watched[UpdateState]

	info, number, state, rollbacks, refusals *prometheus.Desc
}

func newUpdateCollector() *updateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_update_"+name, help, labels, nil)
	}
	return &updateCollector{
		info: d("running_info", "Always 1; the version label is the receiptd version answering here (a release on probation included).", "version"),
		number: d("running_version_number", "The version answering as a number that orders releases: MAJOR*1e6 + MINOR*1e3 + PATCH, "+
			"a pre-release 0.5 below its release; absent for a version that is not MAJOR.MINOR.PATCH below 1000 each (a build from source)."),
		state:     d("state", "1 for the phase update.json is in (idle, verifying, staged, switching, probation, installed, rolled_back, refused), 0 for the others.", "state"),
		rollbacks: d("rollbacks_total", "Releases rolled back on this till, ever (update.json keeps them for good)."),
		refusals:  d("refusals_total", "Release files or offers refused on this till, ever (update.json keeps the count)."),
	}
}

func (c *updateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.number, c.state, c.rollbacks, c.refusals} {
		ch <- d
	}
}

func (c *updateCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	u, ok := f()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, labelValue(u.Running))
	if n, ok := versionNumber(u.Running); ok {
		ch <- prometheus.MustNewConstMetric(c.number, prometheus.GaugeValue, n)
	}
	for _, p := range UpdatePhases {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, gauge(p == u.Phase), p)
	}
	ch <- prometheus.MustNewConstMetric(c.rollbacks, prometheus.CounterValue, float64(u.Rollbacks))
	ch <- prometheus.MustNewConstMetric(c.refusals, prometheus.CounterValue, float64(u.Refusals))
}

// versionNumber orders semantic versions as a gauge can: MAJOR*1e6 +
// MINOR*1e3 + PATCH, and a pre-release ("1.2.0-rc.1") 0.5 below its
// release, above every patch of the release before (a pre-release's own
// order is not kept: "rc.1" and "rc.2" are equal here). Build metadata
// ("+...") is ignored. ok is false for anything else ("dev", a number of
// 1000 or more): a rule compares numbers, and a guess would say a till is
// behind, or ahead, when it is not.
func versionNumber(v string) (n float64, ok bool) {
	v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "+")
	core, pre, isPre := strings.Cut(v, "-")
	if isPre && pre == "" {
		return 0, false
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return 0, false
	}
	for _, p := range parts {
		// No sign, no leading zero (semantic versioning), below 1000.
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || x >= 1000 || p != strconv.Itoa(x) {
			return 0, false
		}
		n = n*1000 + float64(x)
	}
	if isPre {
		n -= 0.5
	}
	return n, true
}
