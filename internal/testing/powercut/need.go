package powercut

import (
	"os"
	"runtime"
	"testing"
)

// Need skips t when Mount cannot work here (Available: no FUSE, not root,
// not Linux), except under CI on Linux, which must run the power-cut
// tests: there it fails t.
func Need(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" && runtime.GOOS == "linux" {
			t.Fatalf("CI must run the power-cut tests: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}
