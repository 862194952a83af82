package fileutil

import "errors"

// ErrSpaceUnknown is DiskSpace's error where the platform cannot tell.
var ErrSpaceUnknown = errors.New("free space cannot be read on this platform")

// Space is what DiskSpace reads of the file system holding a directory.
type Space struct {
	// Free is what this process may still write (without the blocks a
	// file system keeps for root); Total is the file system's size.
	Free, Total uint64
}

// DiskSpace reads the free and total bytes of the file system that holds
// dir, which must exist; ErrSpaceUnknown where the platform cannot tell.
func DiskSpace(dir string) (Space, error) { return diskSpace(dir) }
