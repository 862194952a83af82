package store

// Queued reports how many Update calls wait for the next group (tests only).
func (s *Store) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}
