//go:build !linux

package wal

import (
	"os"

	"github.com/receiptd/receiptd/internal/fileutil"
)

// datasync flushes f (FlushFileBuffers on Windows, fsync elsewhere). A
// build with the test-only tag receiptd_nosync_unsafe skips it.
func datasync(f *os.File) error {
	if fileutil.UnsafeNoSync {
		return nil
	}
	return f.Sync()
}
