// The runtime re-reads the cgroup CPU limit every second to adjust
// GOMAXPROCS (Go 1.25 and later): an idle daemon's only wake-up besides
// its own once-a-second database check. A till's CPU limit does not change
// while receiptd runs, so it is read once at start. GOMAXPROCS in the
// environment still wins.
//go:debug updatemaxprocs=0

package main

import (
	"os"
	"runtime/debug"
)

// tuneGC trades a little memory for CPU. receiptd's live heap is a few MiB,
// so at Go's default GOGC=100 a burst of receipts spends a large share of
// its CPU collecting garbage: 400 raises 64-client accept throughput by
// about a third (go test -bench AcceptParallel ./internal/daemon/ with
// GOGC=100 and 400). The 32 MiB soft limit keeps the heap bounded whatever
// the load: at 400 alone the garbage grows to five times the live heap,
// and the live heap peaks with each batch the write-ahead log applies
// (the records held until the till is quiet, up to 1,024 of about 1.5 KB
// each, and bbolt's copy of the pages they change: with 4,096 the peak
// reached the goal this limit sets, and the collector ran without pause
// under load; internal/queue/log.go). After 100,000
// receipts from 64 clients, private memory was 33 to 46 MiB with a 64 MiB
// limit and 25 to 26 MiB with 32 MiB, for about 1 µs more CPU per receipt
// (receiptd-bench; measured when a batch was 50 ms of receipts; 26.0 MiB
// with batches of up to 4,096 records, docs/performance.md). The GOGC and
// GOMEMLIMIT environment variables still win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(32 << 20)
	}
}
