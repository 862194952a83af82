package fileutil

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ReplaceOptions tune Replace. The zero value replaces path through
// path + ".tmp" with mode 0600, checks nothing, and requires the
// directory fsync.
type ReplaceOptions struct {
	// Temp is the temporary file's name, beside path; "" means path + ".tmp".
	Temp string
	// Perm is the new file's mode; 0 means 0600.
	Perm os.FileMode
	// Check, when set, runs on the complete, fsynced and closed temporary
	// file before the rename; its error stops the replace.
	Check func(tmp string) error
	// DirSyncOptional: a directory that cannot be fsynced (EINVAL: some
	// network and FAT mounts a copy may go to) is not an error.
	DirSyncOptional bool
}

// Replace makes path hold what write writes, durably and whole: write
// fills a new temporary file beside path (a leftover of a replace that was
// killed is removed first), which is fsynced, closed, checked
// (opts.Check), renamed over path, and the directory fsynced. After a
// power cut path holds either its old content or the complete new one. On
// a failure before the rename the temporary file is removed and path is
// unchanged. Its fsyncs are not UnsafeNoSync's to skip: that tag's
// control covers bbolt's commits and the write-ahead log only.
func Replace(path string, write func(f *os.File) error, opts ReplaceOptions) error {
	tmp := cmp.Or(opts.Temp, path+".tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove a leftover %s: %w", tmp, err)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, cmp.Or(opts.Perm, 0o600))
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		if err = f.Sync(); err != nil {
			err = fmt.Errorf("fsync %s: %w", tmp, err)
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", tmp, cerr)
	}
	if err == nil && opts.Check != nil {
		err = opts.Check(tmp)
	}
	if err == nil {
		if err = renameOver(tmp, path); err != nil {
			err = fmt.Errorf("rename %s: %w", tmp, err)
		}
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := SyncDir(filepath.Dir(path)); err != nil && !(opts.DirSyncOptional && errors.Is(err, os.ErrInvalid)) {
		return err
	}
	return nil
}

// WriteFileAtomic is Replace for data already in memory (a marker, a
// cursor): path + ".tmp", written, fsynced and renamed over path. Read
// such a file with ReadFile where another process may be replacing it:
// on Windows the rename holds the old file for a moment.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return Replace(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}, ReplaceOptions{Perm: perm})
}

// Rename renames from to to and fsyncs the directory of to, and that of
// from when it differs, so the new name survives a power cut. from may be
// a file or a directory.
func Rename(from, to string) error {
	if err := renameOver(from, to); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(to)); err != nil {
		return err
	}
	if filepath.Dir(from) != filepath.Dir(to) {
		return SyncDir(filepath.Dir(from))
	}
	return nil
}
