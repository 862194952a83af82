//go:build !windows

package fileutil

import "os"

// renameOver is os.Rename: a reader never holds up a rename outside
// Windows (rename_windows.go).
func renameOver(from, to string) error { return os.Rename(from, to) }
