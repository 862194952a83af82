package api

import (
	"errors"
	"net/http"
)

// Updater is what the update routes ask: the daemon's Supervisor, which
// owns the switch to a new version (daemon/switch.go).
type Updater interface {
	// RequestSwitch asks for the switch to the release staged in the
	// data directory, inside update.window; it returns at once, as the
	// switch stops the Daemon serving this very request. Its error says
	// why no switch will happen (ErrUpdateRefused: not now, here).
	RequestSwitch() error
	// UpdateStatus is the update's state as the running daemon sees it
	// (JSON-encodable).
	UpdateStatus() (any, error)
}

// ErrUpdateRefused marks a RequestSwitch refused for what the till is or
// does (no release staged, a switch under way, a version on probation,
// not built on this platform): POST /receiptd/update answers 409 with it.
var ErrUpdateRefused = errors.New("update refused")

// switchRelease serves POST /receiptd/update: 202 once the switch is
// asked for. It is an operator's route: the token, host and
// cross-origin rules of the package doc hold it as they hold
// /receiptd/entries/{queueId}/retry, and its POST needs a JSON body type,
// which no HTML form can send.
func (s *Server) switchRelease(w http.ResponseWriter, _ *http.Request) {
	if s.d.Update == nil {
		writeError(w, http.StatusServiceUnavailable, "this receiptd takes no update")
		return
	}
	if err := s.d.Update.RequestSwitch(); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrUpdateRefused) {
			code = http.StatusConflict
		}
		writeError(w, code, err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "ACCEPTED",
		"message": "the switch is asked for: it happens between sales, inside update.window (receiptd update status)"})
}

// updateStatus serves GET /receiptd/update.
func (s *Server) updateStatus(w http.ResponseWriter, _ *http.Request) {
	if s.d.Update == nil {
		writeError(w, http.StatusServiceUnavailable, "this receiptd takes no update")
		return
	}
	st, err := s.d.Update.UpdateStatus()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, st)
}
