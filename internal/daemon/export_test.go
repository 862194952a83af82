package daemon

import (
	"time"
	"weak"

	"github.com/receiptd/receiptd/internal/control"
)

// SetMarkerEvery makes d's identityLoop save the marker every after a
// commit instead of defaultMarkerEvery. Call it before Run.
func SetMarkerEvery(d *Daemon, every time.Duration) {
	d.markerEvery = every
}

// Health is s's health as the OpAMP client reads it.
func Health(s *Supervisor) control.Health { return s.health() }

// PosNo is s's posNo as the OpAMP client reads it.
func PosNo(s *Supervisor) string { return s.posNo() }

// Serving is a weak pointer to the Daemon s serves with now (its Value
// nil when none does), so that a test can see it freed.
func Serving(s *Supervisor) weak.Pointer[Daemon] { return weak.Make(s.running()) }
