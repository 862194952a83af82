package daemon

import "time"

// SetMarkerEvery makes identityLoop save the marker d after a commit
// until the returned function restores the default. Not for parallel tests.
func SetMarkerEvery(d time.Duration) (restore func()) {
	old := markerEvery
	markerEvery = d
	return func() { markerEvery = old }
}
