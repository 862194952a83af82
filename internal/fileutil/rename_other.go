//go:build !windows

package fileutil

import "os"

// renameOver is os.Rename: a reader never holds up a rename outside
// Windows (rename_windows.go).
func renameOver(from, to string) error { return os.Rename(from, to) }

// ReadFile is os.ReadFile: a rename never holds up a reader outside
// Windows (rename_windows.go).
func ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }
