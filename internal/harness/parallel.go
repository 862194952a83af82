package harness

import (
	"runtime"
	"testing"
)

// Parallel marks a test that runs receiptd processes as one to run in
// parallel with the others, except on Windows: there AskToStop sends
// Ctrl-C to every process on the console, so a test that stops a process
// must have the console to itself, and such tests run one at a time.
func Parallel(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "windows" {
		t.Parallel()
	}
}
