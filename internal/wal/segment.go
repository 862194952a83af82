package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/receiptd/receiptd/internal/fileutil"
)

// roll closes the current segment and makes the spare the segment whose
// first record is first: its header is written and flushed before it is
// renamed into place and the directory fsynced, so a segment's name never
// stands on disk without its header. Callers hold fileMu (or are Open).
func (l *Log) roll(first uint64) error {
	if l.cur != nil {
		if err := l.cur.Close(); err != nil {
			return fmt.Errorf("close %s: %w", l.cur.Name(), err)
		}
		l.cur = nil
		l.old = append(l.old, l.curSeg)
	}
	spare := filepath.Join(l.dir, spareName)
	f, err := os.OpenFile(spare, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("roll write-ahead log %s: %w", l.dir, err)
	}
	_, err = f.WriteAt(encodeHeader(l.id, first), 0)
	if err == nil {
		err = datasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("roll write-ahead log %s: write header: %w", spare, err)
	}
	path := filepath.Join(l.dir, segName(first))
	if err := rename(spare, path); err != nil {
		return fmt.Errorf("roll write-ahead log %s: %w", l.dir, err)
	}
	if err := fileutil.SyncDir(l.dir); err != nil {
		return fmt.Errorf("roll write-ahead log: %w", err)
	}
	if l.cur, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		return fmt.Errorf("roll write-ahead log: %w", err)
	}
	l.curOff, l.curSeg = headerSize, segFile{first: first, path: path}
	return nil
}

// rename is os.Rename, tried again for about a second on Windows, where
// another program holding the file open (a virus scanner looking at a new
// file) makes it fail with a sharing violation for a moment.
func rename(from, to string) error {
	err := os.Rename(from, to)
	for i := 0; err != nil && runtime.GOOS == "windows" && i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		err = os.Rename(from, to)
	}
	return err
}

// ensureSpare makes sure a spare segment file exists: a full-size file of
// zeros, flushed, so that writing into it later changes no file size and
// a flush of it is data only. A failure for want of space is ErrDiskFull,
// and Full reports it until a spare is made or recycled.
func (l *Log) ensureSpare() error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	spare := filepath.Join(l.dir, spareName)
	fi, err := os.Stat(spare)
	switch {
	case err == nil && fi.Size() == l.segSize: // there already
	case errors.Is(err, fs.ErrNotExist) && l.takeReserve(spare):
		err = nil
	case err == nil || errors.Is(err, fs.ErrNotExist):
		err = l.createSpare(spare)
	default:
		err = fmt.Errorf("write-ahead log spare %s: %w", spare, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.spareMade()
	case errors.Is(err, ErrDiskFull):
		if l.full == nil {
			l.fullSince = time.Now()
		}
		l.full = err
	}
	return err
}

// spareMade notes, under l.mu, that a spare file exists.
func (l *Log) spareMade() {
	if !l.rollPending { // else the spare on disk is already promised
		l.spareReady = true
	}
	l.full = nil
}

// takeReserve renames a kept segment of the spare's size (reserves) to
// spare and reports whether it did. Like a spare just made, it is in the
// directory once the roll that takes it fsyncs the directory.
func (l *Log) takeReserve(spare string) bool {
	for i := 1; i <= reserves; i++ {
		path := spareSlot(spare, i)
		if fi, err := os.Stat(path); err == nil && fi.Size() == l.segSize && rename(path, spare) == nil {
			return true
		}
	}
	return false
}

// spareSlot is the name of slot i of the kept segments: the spare itself
// (0), then its reserves (1 to reserves).
func spareSlot(spare string, i int) string {
	if i == 0 {
		return spare
	}
	return fmt.Sprintf("%s-%d", spare, i)
}

// zeros is one write of a new spare.
var zeros = make([]byte, 256<<10)

func (l *Log) createSpare(spare string) error {
	tmp := spare + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return spareError(tmp, err)
	}
	for off := int64(0); off < l.segSize && err == nil; off += int64(len(zeros)) {
		_, err = f.Write(zeros[:min(int64(len(zeros)), l.segSize-off)])
	}
	if err == nil {
		err = f.Sync() // the size too: later flushes of the segment are data only
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rename(tmp, spare)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return spareError(tmp, err)
	}
	l.sparesMade++
	return nil
}

func spareError(path string, err error) error {
	if fileutil.IsDiskFull(err) {
		return fmt.Errorf("make write-ahead log segment %s: %w: %v", path, ErrDiskFull, err)
	}
	return fmt.Errorf("make write-ahead log segment %s: %w", path, err)
}

// Trim removes the segments before the current one whose records are all
// at or before applied (applied elsewhere and durable there). They become
// the spare when there is none and reserves while some are missing, so a
// next segment costs a rename instead of writing zeros. The current
// segment is never removed.
func (l *Log) Trim(applied uint64) error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	var errs []error
	keep := l.old[:0:0]
	recycled := false
	for i, s := range l.old {
		next := l.curSeg.first
		if i+1 < len(l.old) {
			next = l.old[i+1].first
		}
		if next > applied+1 {
			keep = append(keep, s)
			continue
		}
		if err := l.retire(s, &recycled); err != nil {
			errs = append(errs, err)
			keep = append(keep, s)
		}
	}
	l.old = keep
	if recycled {
		if err := fileutil.SyncDir(l.dir); err != nil {
			errs = append(errs, fmt.Errorf("trim write-ahead log: %w", err))
		}
		l.mu.Lock()
		l.spareMade()
		l.mu.Unlock()
	}
	return errors.Join(errs...)
}

// retire recycles segment s as the spare when there is none, else as a
// reserve when one is missing, if it has the spare's size; else it
// removes it.
func (l *Log) retire(s segFile, recycled *bool) error {
	spare := filepath.Join(l.dir, spareName)
	if fi, err := os.Stat(s.path); err == nil && fi.Size() == l.segSize {
		for i := range reserves + 1 {
			to := spareSlot(spare, i)
			if _, err := os.Stat(to); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err := rename(s.path, to); err != nil {
				return fmt.Errorf("trim write-ahead log: %w", err)
			}
			*recycled = *recycled || i == 0
			return nil
		}
	}
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("trim write-ahead log: %w", err)
	}
	return nil
}

// Count returns how many segment files dir holds (0 when dir is missing).
func Count(dir string) (int, error) {
	segs, err := listSegments(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return len(segs), err
}
