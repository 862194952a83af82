package backup

import "time"

// SetNow makes s read the time from now, which names and times its
// snapshots: the tests of package backup_test, whose snapshot names must
// not depend on the day they run.
func SetNow(s *Scheduler, now func() time.Time) { s.now = now }

// SetSpaceGuard sets what a snapshot leaves free (MinFreeBytes,
// MinFreePercent): the tests of the guard on a small tmpfs.
func SetSpaceGuard(s *Scheduler, minFree, percent uint64) {
	s.minFree, s.minFreePercent = minFree, percent
}
