// Package fleetcontrol holds the end-to-end test of the head office's
// management channel ([control], docs/contract.md "Managing the fleet");
// it has no code of its own besides this comment (tests only).
//
// Its head office is control/controltest's OpAMP server, built on
// opamp-go's server package as a chain would build one: it remembers each
// till by instance UID across its own restarts, picks tills by the `shop`
// label of their agent description, and hands them a remote config
// (pushed over WebSocket, answered to the next poll over HTTP).
// TestFleetControlEndToEnd (opt-in: RECEIPTD_OPAMP_E2E=1) runs 20 real
// receiptd processes against it and checks what issue 31 asks: applied on
// exactly one shop's tills, bad and forbidden configs refused naming the
// key, a config that leaves the daemon not ready rolled back, a till
// restarted offline starting on its remote config, every till reconnecting,
// and every receipt posted all through stored once and issued once. And
// what issue 38 asks: a compromised head office trying every finding of
// the security read on every till (compromised_test.go) is FAILED naming
// each key, and the tills take sales on and write nothing outside their
// folders.
//
// TestFleetUpdateEndToEnd (opt-in: RECEIPTD_UPDATE_E2E=1, update_test.go)
// checks what issue 39 asks of releases: 20 receiptd 1.0.0 processes
// under examples/headoffice, run as its own program, take a signed
// release in waves of 1, 5 and the rest; one that exits at start is
// rolled back on the canary and halts the release; tampered, foreign-key
// and wrong-platform files are refused by the canary with nothing run;
// every receipt posted all through is stored once and issued once.
package fleetcontrol
