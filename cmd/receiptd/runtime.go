package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// tuneRuntime sets the Go runtime for a service that shares a till with
// the POS. The GOGC, GOMEMLIMIT and GOMAXPROCS environment variables still
// win over each setting.
//
// GC: receiptd's live heap is a few MiB, so at Go's default GOGC=100 a
// burst of receipts spends a large share of its CPU collecting garbage:
// 400 raises 64-client accept throughput by about a third (go test -bench
// AcceptParallel ./internal/daemon/ with GOGC=100 and 400). The 64 MiB
// soft limit keeps the heap bounded whatever the load.
//
// One P (GOMAXPROCS=1): a receipt costs receiptd some 30 µs of CPU, and
// the rest of its work is waiting on the disk and the network, which a
// goroutine does without holding a P. A second P let receiptd's goroutines
// chase each other across the till's CPUs, past the POS's threads: on two
// cores shared with 64 clients it cost 25% more CPU per receipt (37 to
// 52 µs against 30 to 33 µs) and made the throughput swing between runs
// (receiptd-bench; docs/performance.md). One P also keeps receiptd from
// ever taking more than one CPU from the POS. Setting GOMAXPROCS also stops
// the runtime re-reading the cgroup CPU limit every second (Go 1.25 and
// later), which would be an idle daemon's only wake-up besides its own
// once-a-second database check.
func tuneRuntime() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(64 << 20)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
