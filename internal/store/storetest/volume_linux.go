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
	dir, err := mountTmpfs(t, size)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount a small tmpfs (CI runs as root): %v", err)
		}
		t.Skipf("mount a small tmpfs: %v (needs root)", err)
	}
	return dir
}

// VolumeOfItsOwn is a directory whose free space is not the host disk's:
// a tmpfs of size bytes, for a test that writes through a free-space guard
// (backup's keeps 10% of the disk free) and must pass however full the
// machine's disk is. Where a tmpfs cannot be mounted (not root) it is
// t.TempDir(), as it is on other systems (volume_other.go).
func VolumeOfItsOwn(t testing.TB, size int) string {
	t.Helper()
	dir, err := mountTmpfs(t, size)
	if err != nil {
		t.Logf("mount a tmpfs: %v; the test's volume is the host's disk", err)
		return t.TempDir()
	}
	return dir
}

func mountTmpfs(t testing.TB, size int) (string, error) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		return "", err
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	return dir, nil
}
