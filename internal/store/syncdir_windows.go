//go:build windows

package store

// syncDir is a no-op on Windows: directories cannot be opened for fsync
// there, and NTFS journals the rename's metadata itself.
func syncDir(string) error { return nil }
