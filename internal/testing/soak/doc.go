// Package soak holds receiptd's end-to-end soak test; it has no code of its
// own besides this comment.
//
// TestSoak runs the real receiptd binary as a subprocess (package harness)
// with the tax service simulator (package sim) in process as its upstream.
// Several POS clients post receipts, re-post on transport errors with the
// same Idempotency-Key, submit duplicates on purpose and delete receipts
// (some still unsent, some sent), while the simulator cycles through
// outages, latency beyond the upstream timeout, a 5xx rate and
// process-then-drop, and receiptd is SIGKILLed and restarted at random
// moments. At the end, with the upstream healthy and the queue drained, it
// checks what docs/contract.md promises:
//
//   - every request answered 2xx reached a terminal state;
//   - every sent receipt was received by the simulator (its outcome id is one
//     the simulator issued, for that billIdSuffix);
//   - no receipt was issued twice unless its entry recorded an ambiguous or
//     interrupted attempt, and duplicates never made a second entry;
//   - no cancelled receipt was ever issued;
//   - the database, opened after receiptd stopped, passes store.Check.
//
// By default the run is short (8 seconds of load, 4 POS clients, 2 kills:
// about 15 seconds), so the whole suite stays quick; SOAK_FULL=1 makes it
// the full soak (100 seconds, 6 clients, 6 kills: about two minutes),
// which CI runs as a step of its own (.ci/run). The seed is logged first;
// SOAK_SEED=N repeats a run's choices (timing still differs), and
// SOAK_DURATION=90s sets the length of the load phase.
package soak
