package daemon

import (
	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/release"
)

// updateState reads update.json for /receiptd/status, the status page
// and the update series; it never writes it (only the version that ran
// before a release writes its outcome, package release).
func (d *Daemon) updateState() (release.State, error) {
	return release.ReadState(d.cfg.DataDir)
}

// watchUpdate makes every scrape and every push sample read update.json
// for the receiptd_update_* series; version is this process's, the one
// answering (a release on probation included, while update.json's
// running still names the version before it).
func (d *Daemon) watchUpdate(m *metrics.Metrics, version string) {
	m.WatchUpdate(func() (metrics.Update, bool) {
		st, err := d.updateState()
		if err != nil {
			return metrics.Update{}, false
		}
		return metrics.Update{Running: version, Phase: string(st.Phase),
			Rollbacks: uint64(len(st.RolledBack)), Refusals: st.Refusals}, true
	})
}
