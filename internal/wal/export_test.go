package wal

// Segments returns how many segment files l keeps (the current one
// included).
func Segments(l *Log) int {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	return len(l.old) + 1
}

// Yields is how many flushes yielded to other callers before writing.
func Yields(l *Log) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.yields
}

// SparesMade is how many spare segments l wrote as zeros, not recycled.
func SparesMade(l *Log) int {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	return l.sparesMade
}
