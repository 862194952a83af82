//go:build !linux

package storetest

import "testing"

// VolumeOfItsOwn is t.TempDir() here: a volume of its own is a tmpfs on
// Linux (volume_linux.go).
func VolumeOfItsOwn(t testing.TB, size int) string {
	t.Helper()
	return t.TempDir()
}
