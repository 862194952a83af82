package datadir

import (
	"fmt"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/store"
)

// CheckClean reports whether the data directory's database opens (read
// only, changing nothing) and passes bbolt's page-by-page check: nil when
// it does, so salvage has nothing to rescue and would only set a good file
// aside. Any other answer (missing, damaged, locked by a running receiptd)
// is the error that says why, and salvage may go on.
func CheckClean(dir string) error {
	db := layout.DB(dir)
	s, err := store.OpenReadOnly(db)
	if err != nil {
		return fmt.Errorf("check %s: %w", db, err)
	}
	defer func() { _ = s.Close() }()
	if err := s.Check(); err != nil {
		return fmt.Errorf("check %s: %w", db, err)
	}
	return nil
}
