package daemon

import "time"

// SetMarkerEvery makes d's identityLoop save the marker every after a
// commit instead of defaultMarkerEvery. Call it before Run.
func SetMarkerEvery(d *Daemon, every time.Duration) {
	d.markerEvery = every
}
