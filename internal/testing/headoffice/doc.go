// Package headoffice is the head office of the fleet tests: a real
// Prometheus server (Debian's prometheus package) with its remote-write
// receiver and an out-of-order window, the shipped alert rules, and the
// queries the tests and the fleet simulation ask it. Its tests start the
// real receiptd binary as tills (internal/testing/harness).
//
// It is a test and benchmark tool; the daemon never imports it.
package headoffice
