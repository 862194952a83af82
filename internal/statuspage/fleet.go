package statuspage

import (
	"fmt"
	"time"
)

// Fleet is the push of this till's metrics to the head office ([fleet]).
type Fleet struct {
	Enabled bool
	// LastSuccess is when the head office last accepted samples (zero:
	// not since start).
	LastSuccess time.Time
	// Buffered samples wait on disk; OldestBuffered is the oldest one's
	// time (zero: none).
	Buffered       uint64
	OldestBuffered time.Time
	// Dropped unsent samples (buffer bounds, refusals).
	Dropped uint64
}

// fleetView is the "head office" block of the page.
type fleetView struct {
	Level, Symbol, Text string
}

// fleetLate is how old the oldest buffered sample may be before the page
// says the head office is not hearing from this till: a few intervals of
// any sensible configuration.
const fleetLate = 5 * time.Minute

func fleetOf(d Data) *fleetView {
	f := d.Fleet
	if f == nil || !f.Enabled {
		return &fleetView{Level: levelOK, Symbol: "–",
			Text: "The push to the head office is off ([fleet] remote_write_url)."}
	}
	last := "not since receiptd started"
	if !f.LastSuccess.IsZero() {
		last = ago(f.LastSuccess, d.Now)
	}
	dropped := ""
	if f.Dropped > 0 {
		dropped = fmt.Sprintf(" %d unsent samples were dropped (buffer full, too old, or refused).", f.Dropped)
	}
	if f.Buffered == 0 || d.Now.Sub(f.OldestBuffered) < fleetLate {
		return &fleetView{Level: levelOK, Symbol: "✓",
			Text: fmt.Sprintf("The head office receives this till's figures; last accepted %s.%s", last, dropped)}
	}
	return &fleetView{Level: levelWarn, Symbol: "⚠",
		Text: fmt.Sprintf("The head office is not accepting this till's figures: %d samples wait on disk since %s and will be sent once it answers; last accepted %s. Sales are not affected.%s",
			f.Buffered, ago(f.OldestBuffered, d.Now), last, dropped)}
}
