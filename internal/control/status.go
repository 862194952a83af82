package control

import (
	"fmt"
	"time"

	"github.com/receiptd/receiptd/internal/config"
)

// Values of RemoteConfig.Status, as OpAMP names them.
const (
	StatusApplying = "APPLYING"
	StatusApplied  = "APPLIED"
	StatusFailed   = "FAILED"
)

// RemoteConfig is what became of the last remote fragment received.
type RemoteConfig struct {
	// Hash is config.FragmentHash of the fragment ("" for an empty one,
	// which returns the till to its own file).
	Hash string `json:"hash"`
	// Status is StatusApplying, StatusApplied or StatusFailed; "" before
	// the first fragment.
	Status string `json:"status"`
	// Message says why a fragment FAILED: config check's messages, or why
	// the daemon was not ready with it.
	Message string `json:"message"`
	// AppliedAt is when the last fragment was APPLIED; zero otherwise.
	AppliedAt time.Time `json:"appliedAt"`
	// ServerHash is the OpAMP server's own hash of the config it sent, hex;
	// it tells the server which config the status is about.
	ServerHash string `json:"serverHash,omitempty"`
}

// Status is the channel's state for /receiptd/status, the metrics and the
// status page.
type Status struct {
	// URL is control.opamp_url; "" when the channel is off.
	URL string `json:"url"`
	// Connected: the last exchange with the server succeeded.
	Connected bool `json:"connected"`
	// LastContact is when the server last answered; zero: not since start.
	LastContact time.Time `json:"lastContact"`
	// RemoteConfig is the fate of the last fragment, kept across restarts.
	RemoteConfig RemoteConfig `json:"remoteConfig"`
	// Failures counts the fragments FAILED since start.
	Failures uint64 `json:"-"`
	// Started is when the client was made: "not reached for a day" counts
	// from it when the server has not answered since.
	Started time.Time `json:"-"`
	// LastError is why the last attempt to reach the server failed (no
	// answer, a refusal such as HTTP 401); "" once it answers again, and
	// before the first attempt ends. FailingSince is the first failed
	// attempt since the last answer (zero: none): with LastContact and
	// Connected, the status page tells connecting, connected and refused
	// apart from the start.
	LastError    string    `json:"-"`
	FailingSince time.Time `json:"-"`
}

// StartConfig is the configuration a daemon starts with: the till's own
// file (ownPath, already loaded as own) with the last applied remote
// fragment from own.DataDir laid over it, so a till starts the same while
// the head office is unreachable. With the channel off, or no fragment
// kept, it is own. When the kept fragment no longer merges (the own file
// changed), own is returned with an error saying why, for the caller to
// log: the head office sends its config again once connected.
func StartConfig(ownPath string, own config.Config) (config.Merged, error) {
	if !own.Control.Enabled() {
		return config.Merged{Config: own}, nil
	}
	fragment, err := newDisk(own.DataDir).fragment(goodFile)
	if err != nil {
		return config.Merged{Config: own}, err
	}
	if len(fragment) == 0 {
		return config.Merged{Config: own}, nil
	}
	m, err := mergeOwn(ownPath, &own, fragment)
	if err != nil {
		return config.Merged{Config: own}, fmt.Errorf("the last remote config no longer fits this till's own file, so it starts with its own file: %w", err)
	}
	return m, nil
}

// mergeOwn lays fragment over the till's own file at ownPath, or, when
// the till has none, over own (nil: the defaults), so that a till whose
// settings were made in code (receiptd demo) keeps them.
func mergeOwn(ownPath string, own *config.Config, fragment []byte) (config.Merged, error) {
	if ownPath != "" || own == nil {
		return config.Merge(ownPath, fragment)
	}
	return config.MergeOnto(*own, "", fragment)
}
