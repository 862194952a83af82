package storetest

import (
	"os"
	"testing"
)

// ChildValue is, in a child test run as its parent's subprocess (RunChild,
// or the parent's own exec.Command), the value the parent set env to; any
// other run of the child test is skipped: only as a subprocess does it
// mean anything.
func ChildValue(t testing.TB, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skip("runs only as a subprocess of its parent test")
	}
	return v
}
