package datadir

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

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
	tmp := PartialName(path)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	body, err := fetch()
	if err != nil {
		return 0, err
	}
	defer body.Close()
	if n, err = io.Copy(f, body); err != nil {
		return n, fmt.Errorf("backup: download after %d bytes: %w", n, err)
	}
	if err := f.Sync(); err != nil {
		return n, fmt.Errorf("backup: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return n, fmt.Errorf("backup: close %s: %w", tmp, err)
	}
	if err := checkDatabase(tmp); err != nil {
		return n, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, syncDir(filepath.Dir(path))
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

// syncDir makes the rename durable (fileutil.SyncDir; nothing on Windows). A
// file system that cannot fsync a directory (EINVAL: some network and FAT
// mounts a backup may go to) is not an error.
func syncDir(dir string) error {
	if err := fileutil.SyncDir(dir); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}
