// Package clock holds receiptd's cancellable waits between the rounds of
// a loop whose pause changes from round to round: Sleep (applying the
// write-ahead log, the sync worker's backoff, the fleet push's retry, the
// demo's outage, the benchmark's idle wait) and Wait, which a wake-up
// channel also ends (the cache's warm-up, the backup loop). Loops on a
// fixed period that also select on other channels (the sync worker's
// poll, the ageing alerts, posapi's watcher, the fleet push, the
// daemon's pruning and identity check) keep a time.Ticker of their own:
// a ticker is their whole timing. It imports nothing of receiptd's.
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
