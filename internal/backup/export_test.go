package backup

import "time"

// SetClock makes s read the time from now: the tests of package
// backup_test, whose snapshot names must not depend on the day they run.
func SetClock(s *Scheduler, now func() time.Time) { s.now = now }
