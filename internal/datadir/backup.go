package datadir

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"

	"github.com/receiptd/receiptd/internal/backup"
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
// /receiptd/backup) into PartialName(path), fsyncs it, checks it opens
// read-only as a consistent receiptd database, and only then renames it
// over path (backup.WriteChecked, the scheduled snapshots' own way), so
// path is either the old file or a complete new copy, as the daemon sent
// it. An error of fetch is returned as it is.
func Backup(ctx context.Context, path string, fetch func() (io.ReadCloser, error)) (n int64, err error) {
	var fetchErr error
	err = backup.WriteChecked(ctx, path, PartialName(path), func(f *os.File) (int, error) {
		body, err := fetch()
		if err != nil {
			fetchErr = err
			return 0, err
		}
		defer body.Close()
		if n, err = io.Copy(f, body); err != nil {
			return 0, fmt.Errorf("download after %d bytes: %w", n, err)
		}
		return -1, nil // the answer does not say how many entries it holds
	})
	if err != nil && err != fetchErr {
		err = fmt.Errorf("backup: %w", err)
	}
	return n, err
}
