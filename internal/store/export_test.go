package store

import "go.etcd.io/bbolt"

// Queued reports how many Update calls wait for the next group (tests only).
func (s *Store) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// Bolt is the open bbolt handle, for tests that check how it was opened.
func (s *Store) Bolt() *bbolt.DB { return s.db }
