package datadir

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/store"
)

// PartialName is where a backup of path is written until it is complete
// and checked.
func PartialName(path string) string { return path + ".receiptd-partial" }

// RemovePartial removes the partial copy a backup of path killed midway
// left; it is never a backup.
func RemovePartial(path string) error {
	if err := os.Remove(PartialName(path)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("backup: remove the partial copy of an earlier backup: %w", err)
	}
	return nil
}

// Backup streams the copy fetch returns (the daemon's GET
// /receiptd/backup) into PartialName(path), fsyncs it, checks it opens as
// a consistent database, and renames it over path, so path is either the
// old file or a complete new copy.
func Backup(path string, fetch func() (io.ReadCloser, error)) (n int64, err error) {
	// theirs is an error of fetch, the download or the check, which says
	// what failed in its own words; the others are the file's.
	var theirs error
	err = fileutil.Replace(path, func(f *os.File) error {
		body, err := fetch()
		if err != nil {
			theirs = err
			return err
		}
		defer body.Close()
		if n, err = io.Copy(f, body); err != nil {
			theirs = fmt.Errorf("backup: download after %d bytes: %w", n, err)
			return theirs
		}
		return nil
	}, fileutil.ReplaceOptions{Temp: PartialName(path), DirSyncOptional: true, Check: func(tmp string) error {
		theirs = checkDatabase(tmp)
		return theirs
	}})
	switch {
	case err == nil:
		return n, nil
	case err == theirs:
		return n, err
	}
	return n, fmt.Errorf("backup: %w", err)
}

// checkDatabase opens the copy, which walks every page (store.Open's
// consistency check), and closes it again. An empty copy, or a bbolt file
// without receiptd's schema, is refused (store.Options.Existing): Open
// would make it a new, empty database.
func checkDatabase(path string) error {
	st, err := store.Open(path, store.Options{LockTimeout: -1, InitialMmapSize: -1, Existing: true})
	if err != nil {
		return fmt.Errorf("backup: the copy does not open: %w", err)
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("backup: close copy: %w", err)
	}
	return nil
}
