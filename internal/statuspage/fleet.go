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
	// LastError is why the last push was not accepted ("": it was, or
	// none was made yet); FailingSince is when the pushes began to fail.
	LastError    string
	FailingSince time.Time
}

// fleetView is the "head office" block of the page.
type fleetView struct {
	Level, Symbol, Text string
}

// fleetLate is how old the oldest buffered sample may be, with the last
// push accepted, before the page says the push is catching up rather than
// current: a few intervals of any sensible configuration.
const fleetLate = 5 * time.Minute

// fleetOf says what the push does now. Only an accepted push, and no
// failure since, is a ✓: before the first one the head office has
// received nothing, whatever waits on disk.
func fleetOf(d Data) *fleetView {
	f := d.Fleet
	if f == nil || !f.Enabled {
		return &fleetView{Level: levelQuiet, Symbol: "–",
			Text: "The push to the head office is off ([fleet] remote_write_url)."}
	}
	wait := "."
	if f.Buffered > 0 {
		wait = fmt.Sprintf("; %s on disk since %s, to be sent oldest first.",
			count(int(f.Buffered), "sample waits", "samples wait"), ago(f.OldestBuffered, d.Now))
	}
	cause := ""
	if f.LastError != "" {
		cause = " (" + f.LastError + ")"
	}
	// With no error known, samples waiting for long and nothing accepted
	// for as long are a failing push too.
	late := f.Buffered > 0 && d.Now.Sub(f.OldestBuffered) >= fleetLate
	failing := f.LastError != "" || (late && d.Now.Sub(f.LastSuccess) >= fleetLate)
	v := &fleetView{Level: levelQuiet, Symbol: "✗"}
	switch {
	case failing && f.LastSuccess.IsZero() && !f.FailingSince.IsZero():
		v.Text = "Not yet accepted by the head office: failing since " + ago(f.FailingSince, d.Now) + cause + wait
	case f.LastSuccess.IsZero():
		v.Symbol, v.Text = "…", "Not yet accepted by the head office: waiting for the first push"+cause+wait
	case failing:
		v.Text = "Not accepted by the head office since " + ago(f.LastSuccess, d.Now) + cause + wait
	case late:
		v.Symbol, v.Text = "…", "The head office accepts this till's figures again and is catching up: last accepted "+ago(f.LastSuccess, d.Now)+wait
	default:
		v.Level, v.Symbol, v.Text = levelOK, "✓", "The head office receives this till's figures; last accepted "+ago(f.LastSuccess, d.Now)+"."
	}
	if v.Symbol != "✓" {
		v.Text += " Sales are not affected."
	}
	if f.Dropped > 0 {
		v.Text += fmt.Sprintf(" %d unsent samples were dropped (buffer full, too old, or refused).", f.Dropped)
	}
	return v
}
