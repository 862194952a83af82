package headoffice

import (
	"os"
	"testing"
)

// Need returns the prometheus binary, or skips t when there is none,
// except under CI, which must run the head-office tests: there it fails t.
func Need(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the head-office tests: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return bin
}
