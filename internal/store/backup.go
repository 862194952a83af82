package store

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

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

// BackupFile writes a consistent copy to path: into a temporary file beside
// it, fsynced, renamed into place, and the directory fsynced, so path holds
// either the old file or the complete new copy, never a partial one.
func (s *Store) BackupFile(path string) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = s.Backup(tmp); err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("backup to %s: sync: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("backup to %s: close: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("backup to %s: rename: %w", path, err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("backup to %s: sync directory: %w", path, err)
	}
	return nil
}
