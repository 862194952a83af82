package wal

// Segments returns how many segment files l keeps (the current one
// included).
func Segments(l *Log) int {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	return len(l.old) + 1
}
