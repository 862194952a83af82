//go:build !unix

package daemon

// stderrIsJournal is false where there is no systemd journal.
func stderrIsJournal() bool { return false }
