package api

import (
	"time"

	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/statuspage"
)

// UpdateStatus is /receiptd/status's update: update.json as read, never
// written (docs/contract.md, "Updating the fleet"). GET /receiptd/update
// gives the whole file, rolled-back hashes included.
type UpdateStatus struct {
	// State is update.json's phase (release.Phase); "unknown" when the
	// file cannot be read, Message then saying why.
	State   string     `json:"state"`
	Message string     `json:"message,omitempty"`
	Since   *time.Time `json:"since"`
	// Running is what update.json says runs (null: the version the
	// package manager installed, the entry point's own); Previous what
	// ran before it; Offered the release being tried, or the last one.
	Running  *release.Version `json:"running"`
	Previous *release.Version `json:"previous"`
	Offered  *release.Version `json:"offered"`
}

// updateUnknown is State when update.json cannot be read.
const updateUnknown = "unknown"

// updateOf reads the update's state for /receiptd/status and the page;
// Deps.UpdateState nil is a till that never took an update.
func (s *Server) updateOf() UpdateStatus {
	if s.d.UpdateState == nil {
		return UpdateStatus{State: string(release.Idle)}
	}
	st, err := s.d.UpdateState()
	if err != nil {
		return UpdateStatus{State: updateUnknown, Message: err.Error()}
	}
	u := UpdateStatus{State: string(st.Phase), Message: st.Message, Running: st.Running, Previous: st.Previous, Offered: st.Offered}
	if !st.Since.IsZero() {
		since := st.Since.UTC()
		u.Since = &since
	}
	return u
}

// pageUpdate is the page's view of u; nil for a till that never took an
// update (the page says nothing of updates).
func pageUpdate(u UpdateStatus, version string) *statuspage.Update {
	if u.State == string(release.Idle) {
		return nil
	}
	p := &statuspage.Update{State: u.State, Message: u.Message, Answering: version,
		Running: versionName(u.Running), Previous: versionName(u.Previous), Offered: versionName(u.Offered)}
	if u.Since != nil {
		p.Since = *u.Since
	}
	return p
}

// versionName is v's version for the page; "" for the entry point's own
// code (statuspage.Update says so in words).
func versionName(v *release.Version) string {
	if v == nil {
		return ""
	}
	return v.Version
}
