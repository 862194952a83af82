package wal

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/receiptd/receiptd/internal/store"
)

// datasync flushes f's data, and the metadata needed to read it back
// (fdatasync): segments are preallocated, so that is data only. A build
// with the test-only tag receiptd_nosync_unsafe skips it, as it does
// bbolt's, for the power-cut test's negative control.
func datasync(f *os.File) error {
	if store.UnsafeNoSync {
		return nil
	}
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
