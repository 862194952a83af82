// Package storetest gives tests a real store in a temporary directory that
// is checked for consistency when the test ends, in the manner of bbolt's
// own test helper.
package storetest

import (
	"path/filepath"
	"testing"

	"github.com/receiptd/receiptd/internal/store"
)

// Open opens a store in t.TempDir(). At cleanup, unless the test already
// closed it, the store is checked with Store.Check (a failure fails the
// test) and closed.
func Open(t testing.TB) *store.Store {
	t.Helper()
	return OpenPath(t, filepath.Join(t.TempDir(), "receiptd.db"))
}

// OpenPath is Open for a chosen path.
func OpenPath(t testing.TB, path string) *store.Store {
	t.Helper()
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { CheckAndClose(t, s) })
	return s
}

// CheckAndClose checks s for consistency and closes it. Calling it on a
// store that is already closed does nothing.
func CheckAndClose(t testing.TB, s *store.Store) {
	t.Helper()
	if s.Closed() {
		return
	}
	if err := s.Check(); err != nil {
		t.Errorf("consistency check of %s: %v", s.Path(), err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close %s: %v", s.Path(), err)
	}
}
