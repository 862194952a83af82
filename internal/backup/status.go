package backup

import (
	"time"
)

// Status is the snapshot loop's state, as /receiptd/status shows it under
// "backup".
type Status struct {
	// Dir is backup.dir; empty when snapshots are off.
	Dir string `json:"dir"`
	// LastSuccess is when the newest good snapshot was taken since start;
	// null when none has been.
	LastSuccess *time.Time `json:"lastSuccess"`
	// LastError is why the last snapshot failed; empty when it worked (or
	// none was tried yet).
	LastError   string     `json:"lastError"`
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
	// LastFile, LastBytes, LastEntries and LastDurationSeconds describe
	// the newest good snapshot.
	LastFile            string  `json:"lastFile,omitempty"`
	LastBytes           int64   `json:"lastBytes,omitempty"`
	LastEntries         int     `json:"lastEntries,omitempty"`
	LastDurationSeconds float64 `json:"lastDurationSeconds,omitempty"`
	// Snapshots and Failures count good and failed snapshots since start.
	Snapshots uint64 `json:"snapshots"`
	Failures  uint64 `json:"failures"`
	// Next is when the loop takes the next one; absent when off.
	Next *time.Time `json:"next,omitempty"`
}

// Status returns a copy of the current state.
func (s *Scheduler) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

func (s *Scheduler) record(r Result, err error, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at = at.UTC()
	if err != nil {
		s.st.LastError, s.st.LastErrorAt = err.Error(), &at
		s.st.Failures++
		return
	}
	s.st.LastError, s.st.LastErrorAt = "", nil
	s.st.LastSuccess = &at
	s.st.LastFile, s.st.LastBytes, s.st.LastEntries = r.Path, r.Bytes, r.Entries
	s.st.LastDurationSeconds = r.Duration.Seconds()
	s.st.Snapshots++
}

func (s *Scheduler) setNext(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t = t.UTC()
	s.st.Next = &t
}
