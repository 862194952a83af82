// Package clock holds receiptd's cancellable waits between the rounds of
// a loop whose pause changes from round to round: Sleep (applying the
// write-ahead log, the sync worker's backoff and outage probe, a send's
// retry, the fleet push's retry, the backup loop, the demo's outage, the
// benchmark's idle wait) and Wait, which a wake-up channel also ends (the
// cache's warm-up, posapi's watcher, woken by a refusal for an empty
// reserve).
//
// Loops on a fixed period that also select on other channels keep a
// time.Ticker of their own, a ticker being their whole timing: the sync
// worker's poll, the ageing alerts, the fleet push, the daemon's pruning
// and identity check, the OpAMP client's health report (control). Waits
// that are one bounded step rather than a loop keep their own timer too:
// the daemon's Supervisor waiting for a new config's daemon to be ready
// (a deadline and a poll), the service commands' wait for a start or a
// stop, and the log's retried segment rename on Windows. The simulator
// (internal/sim) imports nothing of ours and keeps its own latency timer.
// This package imports nothing of receiptd's.
package clock

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever comes first; false means ctx
// ended. Its timer is stopped on return, so a cancelled sleep leaves
// nothing behind.
func Sleep(ctx context.Context, d time.Duration) bool { return Wait(ctx, d, nil) }

// Wait is Sleep that a value on wake also ends early (a nil wake never
// does): false means ctx ended, true that d passed or wake delivered.
func Wait(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-wake:
		return true
	}
}
