package api

import (
	"context"
	"time"

	"github.com/receiptd/receiptd/internal/statuspage"
)

// ControlStatus is the "control" of /receiptd/status: the OpAMP channel
// to the head office ([control]); its url is empty when the channel is
// off.
type ControlStatus struct {
	URL       string `json:"url"`
	Connected bool   `json:"connected"`
	// LastContact is when the head office last answered; null when it has
	// not since start.
	LastContact  *time.Time         `json:"lastContact"`
	RemoteConfig RemoteConfigStatus `json:"remoteConfig"`
	// Started is when the channel started, for the status page's "not
	// reached since receiptd started".
	Started time.Time `json:"-"`
	// LastError and FailingSince, for the status page: why the channel
	// is not connected and since when (control.Status's).
	LastError    string    `json:"-"`
	FailingSince time.Time `json:"-"`
}

// RemoteConfigStatus is what became of the head office's last
// configuration fragment, kept across restarts.
type RemoteConfigStatus struct {
	// Hash is the fragment's SHA-256 (hex), as config check prints it; ""
	// for none or an empty one.
	Hash string `json:"hash"`
	// Status is APPLYING, APPLIED, FAILED, or "" before the first.
	Status string `json:"status"`
	// Message says why a FAILED fragment was not applied.
	Message string `json:"message"`
	// AppliedAt is when it was APPLIED; null otherwise.
	AppliedAt *time.Time `json:"appliedAt"`
}

func (s *Server) controlStatus() ControlStatus {
	if s.d.Control == nil {
		return ControlStatus{}
	}
	c := s.d.Control()
	rc := c.RemoteConfig
	out := ControlStatus{URL: c.URL, Connected: c.Connected, Started: c.Started, LastError: c.LastError, FailingSince: c.FailingSince,
		RemoteConfig: RemoteConfigStatus{Hash: rc.Hash, Status: rc.Status, Message: rc.Message}}
	if !c.LastContact.IsZero() {
		t := c.LastContact.UTC()
		out.LastContact = &t
	}
	if !rc.AppliedAt.IsZero() {
		t := rc.AppliedAt.UTC()
		out.RemoteConfig.AppliedAt = &t
	}
	return out
}

// pageControl is the status page's view of the channel; nil when off.
func pageControl(c ControlStatus) *statuspage.Control {
	if c.URL == "" {
		return nil
	}
	out := &statuspage.Control{URL: c.URL, Started: c.Started, Connected: c.Connected, LastError: c.LastError, FailingSince: c.FailingSince,
		RemoteStatus: c.RemoteConfig.Status, RemoteMessage: c.RemoteConfig.Message}
	if c.LastContact != nil {
		out.LastContact = *c.LastContact
	}
	return out
}

// StatusLine is the status page's first line (statuspage.FirstLine), the
// status text of the till's health for the head office. The OpAMP client
// asks every few seconds; the line needs none of the page's tables.
func (s *Server) StatusLine(ctx context.Context) (string, error) {
	st, err := s.statusBase(ctx)
	if err != nil {
		return "", err
	}
	return statuspage.FirstLine(s.pageOf(st)), nil
}
