package store

import (
	"fmt"
	"io"

	"go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole database to w from one read
// transaction, while writers carry on. It returns the bytes written.
func (s *Store) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.View(func(tx *bbolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backup %s: %w", s.path, err)
	}
	return n, nil
}
