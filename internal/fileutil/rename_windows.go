package fileutil

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// renameBusyWait bounds how long renameOver retries a rename that a
// reader holding the target open refuses.
const renameBusyWait = 2 * time.Second

// renameOver is os.Rename, retried for renameBusyWait while Windows
// refuses it with ERROR_ACCESS_DENIED or ERROR_SHARING_VIOLATION: a file
// another process has open (os.ReadFile, as `receiptd update status`
// reads update.json) cannot be renamed over until it is closed. cmd/go's
// robustio retries the same errors.
func renameOver(from, to string) error {
	deadline := time.Now().Add(renameBusyWait)
	for {
		err := os.Rename(from, to)
		busy := errors.Is(err, syscall.ERROR_ACCESS_DENIED) || errors.Is(err, syscall.Errno(32)) // ERROR_SHARING_VIOLATION
		if err == nil || !busy || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
