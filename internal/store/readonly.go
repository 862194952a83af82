package store

import (
	"fmt"
	"os"
	"runtime"

	"go.etcd.io/bbolt"
)

// checkBeforeWriting, on Windows, opens an existing file read-only first
// and refuses it there if it is damaged, foreign or of a newer schema. A
// writable bbolt open on Windows resizes the file to the mapping size
// before it reads a byte of it (bbolt's mmap truncates the file to
// InitialMmapSize, etcd-io/bbolt#378), so a refused file would no longer be
// the file that was refused; a read-only open maps the file as it is. It
// reports whether it ran the consistency check, so Open need not repeat
// it. Elsewhere a writable open changes nothing before the checks, and
// this does nothing.
func checkBeforeWriting(path string, opts Options, bo *bbolt.Options) (checked bool, err error) {
	if runtime.GOOS != "windows" {
		return false, nil
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return false, nil // absent or empty: bbolt creates it, or reports why not
	}
	ro := *bo
	ro.ReadOnly = true
	ro.InitialMmapSize = 0
	db, err := bbolt.Open(path, 0o600, &ro)
	if err != nil {
		return false, classifyOpenError(path, err)
	}
	s := &Store{db: db, path: path}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("open database %s: close read-only check: %w", path, cerr)
		}
	}()
	if !opts.SkipCheckOnOpen {
		if err := s.Check(); err != nil {
			return false, fmt.Errorf("open database: %w", err)
		}
	}
	if _, err := s.knownSchema(); err != nil {
		return false, err
	}
	return !opts.SkipCheckOnOpen, nil
}
