package release

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/layout"
)

// Phase is where an update stands.
type Phase string

// The phases of update.json, in the order an update goes through them.
const (
	// Idle: no update was ever offered; the entry point's own code runs.
	Idle Phase = "idle"
	// Verifying: `update apply` is checking and copying a file.
	Verifying Phase = "verifying"
	// Staged: the release is verified and in versions/; the switch waits
	// for update.window, or for the next `receiptd run` when no daemon ran.
	Staged Phase = "staged"
	// Switching: the old version stopped its daemon and started the new
	// one, which is not ready yet.
	Switching Phase = "switching"
	// Probation: the new version answered /readyz and must stay up for
	// update.probation.
	Probation Phase = "probation"
	// Installed: the new version passed its probation; a start runs it.
	Installed Phase = "installed"
	// RolledBack: the new version did not pass; the previous one runs,
	// and the file is in RolledBack for good.
	RolledBack Phase = "rolled_back"
	// Refused: `update apply` refused the file (Message says why);
	// nothing changed.
	Refused Phase = "refused"
)

// Version is one release as update.json names it. Path is its executable
// in versions/; "" for the entry point's own code (what the service or
// the package manager installed).
type Version struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256,omitempty"`
	Path    string `json:"path,omitempty"`
}

// State is update.json. The zero value is a till that never took an
// update (ReadState of a missing file).
type State struct {
	Phase   Phase     `json:"state"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	// Running is the version serving now, as far as an update knows; nil:
	// the entry point's own code.
	Running *Version `json:"running,omitempty"`
	// Previous is what ran before Running, what a rollback returns to.
	Previous *Version `json:"previous,omitempty"`
	// Offered is the release being tried, or the last one tried.
	Offered *Version `json:"offered,omitempty"`
	// RolledBack holds the SHA-256 (hex) of every file rolled back on
	// this till: never tried again.
	RolledBack []string `json:"rolled_back"`
	// Refusals counts every refusal recorded on this till (Enter with
	// Refused), kept for good like RolledBack: Message keeps only the
	// last one's reason, and receiptd_update_refusals_total must never go
	// down across restarts.
	Refusals uint64 `json:"refusals,omitempty"`
}

// ReadState reads dataDir's update.json; a missing file is the zero
// State, phase Idle. A file that cannot be read is an error: the state
// decides which code runs, and is never guessed.
func ReadState(dataDir string) (State, error) {
	path := layout.Update(dataDir)
	data, err := fileutil.ReadFile(path) // Write may be renaming a new one over it
	if errors.Is(err, fs.ErrNotExist) {
		return State{Phase: Idle}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("read the update's state: %w", err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, fmt.Errorf("read the update's state %s: %w", path, err)
	}
	if st.Phase == "" {
		st.Phase = Idle
	}
	return st, nil
}

// Write replaces dataDir's update.json with st, durably.
func (st State) Write(dataDir string) error {
	if st.RolledBack == nil {
		st.RolledBack = []string{}
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := fileutil.WriteFileAtomic(layout.Update(dataDir), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the update's state: %w", err)
	}
	return nil
}

// IsRolledBack reports whether a file of this SHA-256 was rolled back
// here before (update.Policy.RolledBack).
func (st State) IsRolledBack(sum []byte) bool {
	return slices.Contains(st.RolledBack, hex.EncodeToString(sum))
}

// Enter moves st to phase p with msg, at now; entering Refused counts
// the refusal (Refusals).
func (st *State) Enter(p Phase, msg string, now time.Time) {
	st.Phase, st.Message, st.Since = p, msg, now.UTC()
	if p == Refused {
		st.Refusals++
	}
}

// RollBack records that the offered release did not pass: why, and its
// hash for good. Running stays the previous version.
func (st *State) RollBack(why string, now time.Time) {
	st.Enter(RolledBack, "rolled back: "+why, now)
	if st.Offered != nil && st.Offered.SHA256 != "" && !slices.Contains(st.RolledBack, st.Offered.SHA256) {
		st.RolledBack = append(st.RolledBack, st.Offered.SHA256)
	}
}

// Install records that the offered release passed its probation: it is
// what runs now, and what ran before is Previous.
func (st *State) Install(now time.Time) {
	prev := st.Running
	if prev == nil {
		prev = &Version{}
	}
	st.Previous, st.Running = prev, st.Offered
	st.Enter(Installed, "installed "+st.Offered.Version+" after its probation", now)
}

// Interrupted reports whether st says a release was being tried when the
// till stopped: the release did not pass, whatever stopped the till.
func (st State) Interrupted() bool { return st.Phase == Switching || st.Phase == Probation }
