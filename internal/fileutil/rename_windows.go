package fileutil

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// busyWait bounds how long renameOver retries a rename that a reader
// holding the target open refuses, and ReadFile an open that a rename
// holding the file refuses.
const busyWait = 2 * time.Second

// busy reports whether err is Windows refusing a file another handle
// holds: ERROR_ACCESS_DENIED or ERROR_SHARING_VIOLATION. cmd/go's
// robustio retries the same errors.
func busy(err error) bool {
	return errors.Is(err, syscall.ERROR_ACCESS_DENIED) || errors.Is(err, syscall.Errno(32)) // ERROR_SHARING_VIOLATION
}

// retryBusy calls f until it succeeds, fails otherwise than busy, or
// busyWait has passed.
func retryBusy(f func() error) error {
	deadline := time.Now().Add(busyWait)
	for {
		err := f()
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// renameOver is os.Rename, retried while Windows refuses it as busy: a
// file another process has open (os.ReadFile, as `receiptd update status`
// reads update.json) cannot be renamed over until it is closed.
func renameOver(from, to string) error {
	return retryBusy(func() error { return os.Rename(from, to) })
}

// ReadFile is os.ReadFile, retried while Windows refuses the open as
// busy: while WriteFileAtomic renames a new file over path, the rename
// holds path open for deletion, and os.Open, which does not share
// deletion, is refused with ERROR_SHARING_VIOLATION (`receiptd update
// apply` reading update.json as the daemon wrote it, under Wine in CI).
func ReadFile(path string) ([]byte, error) {
	var data []byte
	err := retryBusy(func() error {
		var err error
		data, err = os.ReadFile(path)
		return err
	})
	return data, err
}
