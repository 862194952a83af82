package wal

import (
	"os"

	"github.com/receiptd/receiptd/internal/fileutil"
	"golang.org/x/sys/unix"
)

// datasync flushes f's data, and the metadata needed to read it back
// (fdatasync): segments are preallocated, so that is data only. A build
// with the test-only tag receiptd_nosync_unsafe skips it, as it does
// bbolt's, for the power-cut test's negative control.
func datasync(f *os.File) error {
	if fileutil.UnsafeNoSync {
		return nil
	}
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
