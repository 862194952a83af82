//go:build !linux

package powercut

import (
	"errors"
	"runtime"
)

// Mounted is a Disk served at a folder; only Linux can mount one.
type Mounted struct {
	Dir string
}

// errUnsupported is why Mount fails here.
var errUnsupported = errors.New("the power-cut file system needs FUSE on Linux, not " + runtime.GOOS)

// Available says why Mount cannot work here: it needs Linux.
func Available() error { return errUnsupported }

// Mount fails outside Linux.
func Mount(*Disk, string) (*Mounted, error) { return nil, errUnsupported }

// Unmount has nothing to do outside Linux.
func (m *Mounted) Unmount() error { return errUnsupported }
