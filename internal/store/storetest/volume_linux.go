//go:build linux

package storetest

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// SmallVolume mounts a tmpfs of size bytes for the test and returns it: a
// disk that fills. It needs root; without it the test is skipped, except
// in CI, which runs as root.
func SmallVolume(t testing.TB, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount a small tmpfs (CI runs as root): %v", err)
		}
		t.Skipf("mount a small tmpfs: %v (needs root)", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	return dir
}
