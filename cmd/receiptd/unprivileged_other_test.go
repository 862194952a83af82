//go:build !unix

package main

import "testing"

// runUnprivileged needs setuid, which only Unix systems have.
func runUnprivileged(t *testing.T, _ ...string) (int, string) {
	t.Skip("running as another user needs a Unix system")
	return 0, ""
}

// nobody is the Unix tests' unprivileged user; here only so the tests
// that skip before using it compile.
const nobody = 65534
