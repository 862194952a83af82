// Package fileutil holds the file-durability helpers that the database
// (package store), the write-ahead log (package wal) and every other
// writer of a file that must survive a power cut share: creating a
// directory whose name survives a power cut, fsyncing a directory after a
// rename, the one durable replace of a file (Replace: write to a
// temporary file, fsync, rename, fsync the directory) and rename
// (Rename), telling a full disk from other write errors, reading a disk's
// free space (DiskSpace), and the two
// test-only build tags that turn fsyncs off for the power-cut test's
// negative controls. It imports nothing of receiptd's, so the log stays a
// leaf without bbolt.
package fileutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// MkdirSynced creates dir when missing, and fsyncs the parent of every
// directory it creates, so the new directory's name survives a power cut.
func MkdirSynced(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirSynced(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return SyncDir(parent)
}

// SyncDir fsyncs directory dir, making the names created or renamed in it
// durable. Windows cannot open a directory for fsync, and NTFS journals
// its names, so there it does nothing (as in a build with the test-only
// tag receiptd_nodirsync_unsafe: UnsafeNoDirSync).
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" || UnsafeNoDirSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// IsDiskFull reports whether err means a file could not grow (ENOSPC,
// EFBIG, EDQUOT, or Windows' ERROR_DISK_FULL). Some writers (bbolt among
// them) format these errors with %s, so the errno's text is matched too.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, e := range diskFullErrnos {
		if errors.Is(err, e) || strings.Contains(msg, e.Error()) {
			return true
		}
	}
	return false
}
