//go:build unix

package daemon

import (
	"fmt"
	"os"
	"syscall"
)

// stderrIsJournal reports whether standard error is systemd's journal:
// systemd sets JOURNAL_STREAM to "DEVICE:INODE" of the stream it connects,
// and a child that inherited the variable but not the stream (a shell
// started from a service) does not match it (systemd.exec(5)).
func stderrIsJournal() bool {
	want := os.Getenv("JOURNAL_STREAM")
	if want == "" {
		return false
	}
	fi, err := os.Stderr.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fmt.Sprintf("%d:%d", st.Dev, st.Ino) == want
}
