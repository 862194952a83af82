// Package clock holds receiptd's one way of waiting on time: a sleep that
// ends early when its context does, for the loops that pause between
// rounds (applying the write-ahead log, the sync worker's polls, the demo's
// outage, the benchmark's idle wait). It imports nothing of receiptd's.
package clock

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, whichever comes first; false means ctx
// ended. Its timer is stopped on return, so a cancelled sleep leaves
// nothing behind.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
