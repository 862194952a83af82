package release

import (
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/receiptd/receiptd/internal/update"
)

// DevRunning is the version a build from source ("dev") compares as when
// update.allow_downgrade lets it take a release: older than any release.
const DevRunning = "0.0.0-dev"

// ErrDevBuild: a build from source takes a release only with
// update.allow_downgrade.
var ErrDevBuild = errors.New("this receiptd is a build from source (version dev): it takes a release only with update.allow_downgrade = true")

// ErrBusy: a release is being switched to or on probation; no other is
// taken until it has an outcome.
var ErrBusy = errors.New("a switch is under way")

// Till is what a till takes a release by: its data directory, its own
// file's [update] keys and rule, and the version of its own executable.
// `receiptd update apply` and the head office's offers (package control)
// take releases through it alike.
type Till struct {
	DataDir        string
	TrustedKeys    []string
	AllowDowngrade bool
	// Binary is the version of the executable the entry point runs
	// ("dev" for a build from source).
	Binary string
	// Now is the clock of update.json's since; nil: time.Now.
	Now func() time.Time
}

func (t Till) now() time.Time {
	if t.Now == nil {
		return time.Now()
	}
	return t.Now()
}

// Policy is what this till accepts with st as update.json says: the
// running version is the one an update installed, else the entry point's
// own (Binary).
func (t Till) Policy(st State) (update.Policy, error) {
	keys, err := update.ParseKeys(t.TrustedKeys)
	if err != nil {
		return update.Policy{}, err
	}
	running := t.Binary
	if st.Running != nil && st.Running.Version != "" {
		running = st.Running.Version
	}
	if running == "dev" {
		if !t.AllowDowngrade {
			return update.Policy{}, ErrDevBuild
		}
		running = DevRunning
	}
	return update.Policy{Keys: keys, Platform: runtime.GOOS + "/" + runtime.GOARCH, Running: running,
		AllowDowngrade: t.AllowDowngrade, RolledBack: st.IsRolledBack}, nil
}

// Running is the version serving as update.json says, else Binary.
func (t Till) Running(st State) Version {
	if st.Running != nil && st.Running.Version != "" {
		return *st.Running
	}
	return Version{Version: t.Binary}
}

// CheckOffer refuses an offer on what is known before its file is
// fetched (update.Policy.CheckOffer): a refusal is recorded in
// update.json (refused, the offer and the reason) and returned, an
// *update.RefusedError or ErrDevBuild (Refusal). ErrBusy while a switch
// is under way records nothing.
func (t Till) CheckOffer(o update.Offer) error {
	st, err := ReadState(t.DataDir)
	if err != nil {
		return err
	}
	if st.Interrupted() {
		return fmt.Errorf("%w: %s is %s", ErrBusy, st.Offered.Version, st.Phase)
	}
	p, err := t.Policy(st)
	if errors.Is(err, ErrDevBuild) {
		return t.refused(st, o, err)
	}
	if err != nil {
		return err
	}
	if _, _, err := p.CheckOffer(o); err != nil {
		return t.refused(st, o, err)
	}
	return nil
}

// Take checks the release file at path against the offer and keeps it
// (Stage), recording each step in update.json: verifying, then staged
// (State.Offered is the release kept) or refused with the reason. from
// says where the file came from, for the message. An error that is not
// a refusal (the file cannot be read) leaves update.json as it was.
func (t Till) Take(o update.Offer, path, from string) (Version, error) {
	st, err := ReadState(t.DataDir)
	if err != nil {
		return Version{}, err
	}
	if st.Interrupted() {
		return Version{}, fmt.Errorf("%w: %s is %s; wait for it (receiptd update status)", ErrBusy, st.Offered.Version, st.Phase)
	}
	p, err := t.Policy(st)
	if err != nil {
		return Version{}, err
	}
	before := st
	st.Enter(Verifying, "checking "+from+" as "+o.Version, t.now())
	if err := st.Write(t.DataDir); err != nil {
		return Version{}, err
	}
	v, err := Stage(t.DataDir, p, o, path)
	if err != nil {
		if update.ReasonOf(err) == "" { // not a verdict on the file: as it was
			return Version{}, errors.Join(err, before.Write(t.DataDir))
		}
		return Version{}, t.refused(st, o, err)
	}
	st.Offered = &v
	st.Enter(Staged, v.Version+" verified; waiting for the switch", t.now())
	if err := st.Write(t.DataDir); err != nil {
		return Version{}, err
	}
	return v, nil
}

// Refusal reports whether err is a verdict that this till does not take
// the release (recorded in update.json), rather than a failure to decide.
func Refusal(err error) bool {
	return update.ReasonOf(err) != "" || errors.Is(err, ErrDevBuild)
}

// refused records the refusal of o in update.json and returns err, the
// refusal.
func (t Till) refused(st State, o update.Offer, err error) error {
	st.Offered = &Version{Version: o.Version}
	if len(o.SHA256) > 0 {
		st.Offered.SHA256 = hex.EncodeToString(o.SHA256)
	}
	st.Enter(Refused, err.Error(), t.now())
	return errors.Join(err, st.Write(t.DataDir))
}
