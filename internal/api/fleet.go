package api

import (
	"time"

	"github.com/receiptd/receiptd/internal/statuspage"
)

// FleetStatus is the "fleet" of /receiptd/status: the push of this
// till's metrics to the head office.
type FleetStatus struct {
	Enabled bool `json:"enabled"`
	// LastSuccess is when the head office last accepted samples; null
	// when it has not since start.
	LastSuccess *time.Time `json:"lastSuccess"`
	// BufferedSamples wait on disk; OldestBuffered is the sample time of
	// the oldest (null when none).
	BufferedSamples uint64     `json:"bufferedSamples"`
	OldestBuffered  *time.Time `json:"oldestBuffered"`
	// DroppedSamples are unsent samples dropped since start (buffer
	// bounds, refusals).
	DroppedSamples uint64 `json:"droppedSamples"`
	// LastError and FailingSince, for the status page: why the last push
	// was not accepted and since when the pushes fail ("" and zero when
	// the last one was accepted, or none was made yet).
	LastError    string    `json:"-"`
	FailingSince time.Time `json:"-"`
}

// FleetState is what Deps.Fleet reports; zero times mean "never" and
// "none".
type FleetState struct {
	Enabled         bool
	LastSuccess     time.Time
	BufferedSamples uint64
	OldestBuffered  time.Time
	DroppedSamples  uint64
	LastError       string
	FailingSince    time.Time
}

func (s *Server) fleetStatus() FleetStatus {
	if s.d.Fleet == nil {
		return FleetStatus{}
	}
	f := s.d.Fleet()
	out := FleetStatus{Enabled: f.Enabled, BufferedSamples: f.BufferedSamples, DroppedSamples: f.DroppedSamples,
		LastError: f.LastError, FailingSince: f.FailingSince}
	if !f.LastSuccess.IsZero() {
		t := f.LastSuccess.UTC()
		out.LastSuccess = &t
	}
	if !f.OldestBuffered.IsZero() {
		t := f.OldestBuffered.UTC()
		out.OldestBuffered = &t
	}
	return out
}

// pageFleet is the status page's view of the same.
func pageFleet(f FleetStatus) *statuspage.Fleet {
	out := &statuspage.Fleet{Enabled: f.Enabled, Buffered: f.BufferedSamples, Dropped: f.DroppedSamples,
		LastError: f.LastError, FailingSince: f.FailingSince}
	if f.LastSuccess != nil {
		out.LastSuccess = *f.LastSuccess
	}
	if f.OldestBuffered != nil {
		out.OldestBuffered = *f.OldestBuffered
	}
	return out
}
