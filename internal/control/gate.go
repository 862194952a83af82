package control

import (
	"fmt"
	"time"
)

// Defaults of Options.ApplyEvery and Options.MaxApplyBackoff.
const (
	DefaultApplyEvery      = time.Minute
	DefaultMaxApplyBackoff = time.Hour
)

// gate rate-limits the configs that rebuild the daemon: each costs a
// swap (the old daemon stopped, a new one built and waited for, up to
// control.rollback_after and a second rebuild when it is not ready), so a
// head office sending a new config every 100 ms must not keep the till
// swapping. A config that passes its checks and changes the daemon waits
// until next: ApplyEvery after the last one APPLIED, and after one the
// daemon refused a backoff doubling from ApplyEvery up to MaxApplyBackoff,
// reset by the next APPLIED. A config refused by its checks, or equal to
// the one in effect, costs no rebuild: it neither waits nor delays the
// next. Only applyLoop uses it.
type gate struct {
	every, max time.Duration
	next       time.Time     // no rebuild starts before; zero: one may start now
	backoff    time.Duration // the wait after the next refusal; zero: every
}

// wait is how long a config that rebuilds the daemon must still wait;
// zero: apply it now.
func (g *gate) wait(now time.Time) time.Duration { return max(g.next.Sub(now), 0) }

// done records the end of a rebuild at now: applied, or refused by the
// daemon.
func (g *gate) done(now time.Time, applied bool) {
	if g.backoff == 0 || applied {
		g.backoff = g.every
	}
	if applied {
		g.next = now.Add(g.every)
		return
	}
	g.next = now.Add(g.backoff)
	g.backoff = min(2*g.backoff, g.max)
}

// waiting is the message of a config held until until.
func (g *gate) waiting(until time.Time) string {
	return fmt.Sprintf("waiting until %s UTC before applying it: a till applies at most one configuration every %s, and after one it could not apply waits longer, up to %s",
		until.UTC().Format("15:04:05"), g.every, g.max)
}
