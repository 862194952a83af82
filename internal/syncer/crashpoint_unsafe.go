//go:build receiptd_crashpoints_unsafe

package syncer

import (
	"os"
	"strconv"
	"sync/atomic"
)

// Crash points, for a binary built with the tag receiptd_crashpoints_unsafe
// only (never a release): with RECEIPTD_CRASH_AT naming a point (sending,
// answered, recorded, published) the process kills itself (SIGKILL; TerminateProcess
// on Windows) the RECEIPTD_CRASH_AFTER-th time (default 1) a send reaches
// it, so the crash test can stop receiptd exactly between two steps of a
// sale, where a kill from outside lands only by chance.
var (
	crashAt      = os.Getenv("RECEIPTD_CRASH_AT")
	crashAfter   = crashCount(os.Getenv("RECEIPTD_CRASH_AFTER"))
	crashReached atomic.Int64
)

func crashCount(s string) int64 {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return n
	}
	return 1
}

func crashPoint(point string) {
	if point != crashAt || crashReached.Add(1) != crashAfter {
		return
	}
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {} // nothing more of this process runs
}
