package store

import "time"

// Health is what a person or a monitor needs to know about the database
// beyond its contents: whether it can take writes.
type Health struct {
	// Path is the database file.
	Path string
	// DiskFull is the text of the last commit's ErrDiskFull: the file could
	// not grow, so nothing new can be accepted. Empty once a commit
	// succeeds again. DiskFullSince is when the run of such failures began.
	DiskFull      string
	DiskFullSince time.Time
	// Failed is why every write is refused until receiptd restarts and
	// reopens the database (ErrFailed); empty while writes work.
	Failed string
}

// Health reports whether the Store can take writes. It is cheap (no disk
// access) and safe for concurrent use.
func (s *Store) Health() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := Health{Path: s.path, DiskFullSince: s.diskFullSince}
	if s.diskFull != nil {
		h.DiskFull = s.diskFull.Error()
	}
	if s.failed != nil {
		h.Failed = s.failed.Error()
	}
	return h
}

// noteDiskFull records the outcome of a commit for Health: err is its
// ErrDiskFull, or nil for a commit that succeeded.
func (s *Store) noteDiskFull(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.diskFull, s.diskFullSince = nil, time.Time{}
		return
	}
	if s.diskFull == nil {
		s.diskFullSince = time.Now()
	}
	s.diskFull = err
}
