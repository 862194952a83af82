package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/update"
)

// Update is [update]: which releases this till takes (`receiptd update
// apply`), when it switches to one, and how long the new version is on
// probation before it counts as installed (docs/contract.md, "Updating
// the fleet").
type Update struct {
	// TrustedKeys are the minisign public keys a release must be signed
	// by (the line of a .pub file that starts with RW). Empty, the
	// default: updates are off. From the till's own file only, and only a
	// restart changes them: a head office that could set them could sign
	// its own releases.
	TrustedKeys []string `toml:"trusted_keys" change:"restart"`
	// AllowDowngrade lets a release older than the running version run
	// (and a build from source, version "dev", take any release).
	AllowDowngrade bool `toml:"allow_downgrade" change:"restart"`
	// Probation is how long a new version must stay up, after answering
	// /readyz, before it counts as installed; until then the previous
	// version takes over again if it stops.
	Probation Duration `toml:"probation" change:"remote"`
	// Window is when a switch may happen, "HH:MM-HH:MM" in
	// accept.timezone (it may run past midnight: "22:00-06:00"). Empty,
	// the default: at once.
	Window string `toml:"window" change:"remote"`
	// Keep is how many versions stay in data_dir/versions, the running
	// and the previous ones first.
	Keep int `toml:"keep" change:"remote"`
}

// minProbation bounds update.probation: a version must at least be seen
// up once after it answered.
const minProbation = time.Second

func defaultUpdate() Update {
	return Update{TrustedKeys: []string{}, Probation: Dur(10 * time.Minute), Keep: 2}
}

func (u Update) check(ch *checker) {
	if _, err := update.ParseKeys(u.TrustedKeys); err != nil {
		key, problem, _ := strings.Cut(err.Error(), ": ")
		ch.add(key, "%s", problem)
	}
	if u.Probation.Duration < minProbation {
		ch.add("update.probation", "must be at least %s, not %s", minProbation, u.Probation)
	}
	if _, err := ParseWindow(u.Window); err != nil {
		ch.add("update.window", "%v", err)
	}
	if u.Keep < 2 {
		ch.add("update.keep", "must be at least 2 (the running version and the one to roll back to), not %d", u.Keep)
	}
}

// Window is update.window as minutes of the day: a switch may happen
// from From up to (not including) To. The zero value is no window: at
// once.
type Window struct {
	From, To int // minutes after midnight
	Set      bool
}

// ParseWindow reads "HH:MM-HH:MM"; "" is no window.
func ParseWindow(s string) (Window, error) {
	if s == "" {
		return Window{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	from, err1 := parseClock(a)
	to, err2 := parseClock(b)
	if !ok || err1 != nil || err2 != nil {
		return Window{}, fmt.Errorf(`want "HH:MM-HH:MM" like "02:00-05:00", not %q`, s)
	}
	if from == to {
		return Window{}, fmt.Errorf("%q is empty: from and to are the same time", s)
	}
	return Window{From: from, To: to, Set: true}, nil
}

func parseClock(s string) (int, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(h) != 2 || len(m) != 2 || hh > 23 || mm > 59 || hh < 0 || mm < 0 {
		return 0, fmt.Errorf("not HH:MM: %q", s)
	}
	return hh*60 + mm, nil
}

// Next is how long from now until the window opens: zero when now is
// inside it (or there is no window). now is read in its own location:
// the caller passes it in accept.timezone.
func (w Window) Next(now time.Time) time.Duration {
	if !w.Set {
		return 0
	}
	cur := now.Hour()*60 + now.Minute()
	inside := cur >= w.From && cur < w.To
	if w.From > w.To { // past midnight
		inside = cur >= w.From || cur < w.To
	}
	if inside {
		return 0
	}
	wait := w.From - cur
	if wait < 0 {
		wait += 24 * 60
	}
	return time.Duration(wait)*time.Minute - time.Duration(now.Second())*time.Second - time.Duration(now.Nanosecond())
}
