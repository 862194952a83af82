package backup

import "time"

// SetNow sets the clock s names and times its snapshots by.
func SetNow(s *Scheduler, now func() time.Time) { s.now = now }
