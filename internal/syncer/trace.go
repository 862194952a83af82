package syncer

import (
	"context"
	"runtime/trace"
)

// TraceCategory is the category of the execution-trace log events that
// mark the steps of a sale (TracePhase).
const TraceCategory = "receiptd.sale"

// TracePhase marks a step of a sale in a running execution trace
// (runtime/trace): the API and the worker mark the request, its record
// made durable, the claim, the send, the answer, the outcome recorded,
// the answer handed back and written, so that receiptd-bench can say
// where each microsecond of an online sale goes (docs/performance.md).
// queueID is empty for the request's first step. While no trace runs it
// costs a load and a branch, and allocates nothing.
func TracePhase(phase, queueID string) {
	if trace.IsEnabled() {
		trace.Log(context.Background(), TraceCategory, phase+" "+queueID)
	}
}
