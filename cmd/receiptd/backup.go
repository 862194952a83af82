package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/store"
)

func init() {
	commands["backup"] = command{summary: "write a consistent copy of the database to FILE", run: runBackup}
}

func runBackup(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "backup", "backup [-addr URL] [-token T] [-force] FILE")
	var df daemonFlags
	df.register(fs)
	force := fs.Bool("force", false, "overwrite FILE if it exists")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want the file to write the backup to")
	}
	path := fs.Arg(0)
	// A backup killed midway left its partial copy; it is never a backup.
	if err := os.Remove(partialName(path)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("backup: remove the partial copy of an earlier backup: %w", err)
	}
	if _, err := os.Stat(path); err == nil && !*force {
		return usagef("%s exists: pass -force to overwrite it, or choose another file", path)
	}
	c, err := df.client()
	if err != nil {
		return err
	}
	n, err := backup(ctx, c, path)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "backup written and checked: %s (%d bytes)\n", path, n)
	return nil
}

// partialName is where a backup of path is written until it is complete
// and checked.
func partialName(path string) string { return path + ".receiptd-partial" }

// backup streams GET /receiptd/backup into partialName(path), fsyncs it,
// checks it opens as a consistent database, and renames it over path, so
// path is either the old file or a complete new copy.
func backup(ctx context.Context, c *apiClient, path string) (n int64, err error) {
	tmp := partialName(path)
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
	resp, err := c.do(ctx, "GET", "/receiptd/backup")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if n, err = io.Copy(f, resp.Body); err != nil {
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
