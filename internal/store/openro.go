package store

import (
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// OpenReadOnly opens an existing receiptd database at path for reading
// only: a snapshot or backup being checked. It changes nothing in the file
// (no migration, no marker), shares it with other readers, and refuses
// (ErrCorrupt) a file that bbolt cannot open or that has no receiptd
// schema, and (ErrNewerSchema) one written by a newer receiptd. Run Check
// for the page-by-page consistency check. Update on it fails.
func OpenReadOnly(path string) (s *Store, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("open database %s read-only: %w: %s", path, ErrCorrupt, describeDamage(1, r))
		}
	}()
	if err := checkSize(path); err != nil {
		return nil, err
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, classifyOpenError(path, err)
	}
	s = &Store{db: db, path: path}
	if err := s.refuseForeign(Options{Existing: true}); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}
