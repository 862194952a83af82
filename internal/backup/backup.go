// Package backup owns receiptd's scheduled snapshots ([backup]): every
// Config.Every, a consistent copy of the database, with every acknowledged
// receipt applied, is written to Config.Dir as receiptd-<UTC time>.db and
// checked; the newest Config.Keep are kept. It owns the one way a copy of
// the database is written and checked (WriteChecked), which `receiptd
// backup` shares.
//
// # Promises
//
//   - A file named receiptd-<UTC time>.db in Dir is a complete copy that
//     passed its check: it is written as <name>.tmp, fsynced, opened
//     read-only, walked page by page (bbolt's consistency check) and its
//     entries counted against the count taken while it was copied, and
//     only then renamed and the directory fsynced (WriteChecked, which
//     `receiptd backup` uses too). One that fails is deleted before it
//     ever has the name, and the failure is reported (Status, the error of
//     Take).
//   - Pruning removes only files whose names match the snapshot pattern
//     (and their leftover .tmp files); nothing else in Dir is touched.
//   - A snapshot holds no lock of the queue while it copies (see
//     queue.WriteCopy): accepts carry on into the write-ahead log, so a
//     snapshot costs an accept only the disk bandwidth its writes take.
//   - Loop is the only goroutine; it ends when its context ends, a copy
//     in flight with it (its .tmp file removed).
package backup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/queue"
)

// Config is [backup] as the loop needs it.
type Config struct {
	Dir   string        // empty: snapshots are off
	Every time.Duration // time between two snapshots; more than zero
	Keep  int           // snapshots kept; at least 1
}

// Source writes a consistent copy of the database (queue.WriteCopy) and
// tells its size beforehand (queue.CopySize), so a snapshot never fills
// the disk it is written to.
type Source interface {
	WriteCopy(ctx context.Context, w io.Writer) (queue.Copy, error)
	CopySize() (int64, error)
}

// A snapshot is skipped, and counted and reported as failed with
// ErrNoSpace, when writing it would leave less free than the larger of
// MinFreeBytes and MinFreePercent of backup.dir's file system: a disk
// filled by snapshots stops sales when it is the database's disk too, and
// a USB stick filled to the last byte takes no next snapshot anyway. 10%
// is where most disk monitoring warns; 256 MiB is room for a day of
// receipts on a small disk.
const (
	MinFreeBytes   = 256 << 20
	MinFreePercent = 10
)

// ErrNoSpace is the error of a snapshot skipped for want of free space;
// nothing was written.
var ErrNoSpace = errors.New("not enough free space")

// timeLayout is the UTC time in a snapshot's name.
const timeLayout = "20060102T150405Z"

// namePattern matches snapshot file names and nothing else.
var namePattern = regexp.MustCompile(`^receiptd-[0-9]{8}T[0-9]{6}Z\.db$`)

// Name is the file name of a snapshot taken at t.
func Name(t time.Time) string { return "receiptd-" + t.UTC().Format(timeLayout) + ".db" }

// Result is one snapshot that passed its check.
type Result struct {
	Path     string
	Bytes    int64
	Entries  int
	Duration time.Duration // writing and checking it
}

// Scheduler takes snapshots, by itself (Loop) or when asked (Take).
// It is safe for concurrent use; snapshots never overlap.
type Scheduler struct {
	cfg Config
	src Source
	log *zap.Logger
	now func() time.Time

	// minFree and minFreePercent: see MinFreeBytes.
	minFree, minFreePercent uint64

	takeMu   sync.Mutex // one snapshot at a time
	mu       sync.Mutex
	st       Status
	dirCause string // CheckDir's last cause logged
}

// New returns a Scheduler for cfg. It starts nothing; Loop does nothing
// when cfg.Dir is empty.
func New(cfg Config, src Source, log *zap.Logger) *Scheduler {
	return &Scheduler{cfg: cfg, src: src, log: log.Named("backup"), now: time.Now,
		minFree: MinFreeBytes, minFreePercent: MinFreePercent, st: Status{Dir: cfg.Dir}}
}

// Loop takes a snapshot every cfg.Every until ctx ends. The first comes
// cfg.Every after the newest snapshot already in Dir (at the soonest
// firstDelay after start, so a restart does not pile snapshots up, and
// one overdue is not late by more than that). A failed one is tried again
// after retryDelay, or cfg.Every when that is shorter. The log says when
// snapshots fail and when they work again.
func (s *Scheduler) Loop(ctx context.Context) {
	if s.cfg.Dir == "" {
		return
	}
	next := s.firstDelay()
	failing := false
	for {
		s.setNext(s.now().Add(next))
		if !clock.Sleep(ctx, next) {
			return
		}
		r, err := s.Take(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			s.log.Error("snapshot failed; the database itself is unaffected", zap.String("dir", s.cfg.Dir), zap.Error(err))
			failing, next = true, min(s.cfg.Every, retryDelay)
			continue
		case failing:
			s.log.Info("snapshots work again", zap.String("file", r.Path))
		default:
			s.log.Info("snapshot written and checked", zap.String("file", r.Path), zap.Int64("bytes", r.Bytes),
				zap.Int("entries", r.Entries), zap.Duration("took", r.Duration))
		}
		failing, next = false, s.cfg.Every
	}
}

// firstDelay and retryDelay: see Loop.
const (
	firstDelay = 30 * time.Second
	retryDelay = time.Minute
)

func (s *Scheduler) firstDelay() time.Duration {
	soonest := min(s.cfg.Every, firstDelay)
	names, err := s.list()
	if err != nil || len(names) == 0 {
		return soonest
	}
	newest, err := time.Parse(timeLayout, names[len(names)-1][len("receiptd-"):len("receiptd-")+len(timeLayout)])
	if err != nil {
		return soonest
	}
	return min(max(newest.Add(s.cfg.Every).Sub(s.now()), soonest), s.cfg.Every)
}

// Take writes one snapshot now, checks it, and prunes the oldest beyond
// cfg.Keep. A snapshot that fails is removed and its error returned (and
// kept in Status); a failure to prune is logged only: the new snapshot is
// good.
func (s *Scheduler) Take(ctx context.Context) (Result, error) {
	if s.cfg.Dir == "" {
		return Result{}, errors.New("snapshot: backup.dir is not set")
	}
	s.takeMu.Lock()
	defer s.takeMu.Unlock()
	start := s.now()
	r, err := s.write(ctx, start)
	r.Duration = s.now().Sub(start)
	s.record(r, err, start)
	if err != nil {
		return r, err
	}
	if err := s.prune(r.Path); err != nil {
		s.log.Warn("could not remove old snapshots", zap.String("dir", s.cfg.Dir), zap.Error(err))
	}
	return r, nil
}

// CheckDir reports whether Dir can hold snapshots: it is created when
// missing and a file is written and removed in it. It is nil when Dir is
// empty (snapshots off). The daemon counts a Dir that fails it as not
// ready, so a config naming a folder it cannot use is rolled back rather
// than found out at the first snapshot.
//
// Its error says only that Dir cannot hold snapshots: it reaches a head
// office in a FAILED status, which must not learn whether some path on the
// till is a file, a folder or nothing (issue 38). The cause goes to the
// log, once for each cause.
func (s *Scheduler) CheckDir() error {
	if s.cfg.Dir == "" {
		return nil
	}
	if err := s.checkDir(); err != nil {
		s.mu.Lock()
		seen := s.dirCause == err.Error()
		s.dirCause = err.Error()
		s.mu.Unlock()
		if !seen {
			s.log.Warn("backup.dir cannot hold snapshots", zap.Error(err))
		}
		return fmt.Errorf("backup.dir: %s cannot hold snapshots: it cannot be created or written in (the till's log says why)", s.cfg.Dir)
	}
	return nil
}

func (s *Scheduler) checkDir() error {
	if err := fileutil.MkdirSynced(s.cfg.Dir); err != nil {
		return fmt.Errorf("create %s: %w", s.cfg.Dir, err)
	}
	f, err := os.CreateTemp(s.cfg.Dir, ".receiptd-check-*")
	if err != nil {
		return fmt.Errorf("write in %s: %w", s.cfg.Dir, err)
	}
	name := f.Name()
	err = f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", s.cfg.Dir, err)
	}
	return nil
}

// write makes the snapshot named for start and checks it (WriteChecked).
func (s *Scheduler) write(ctx context.Context, start time.Time) (Result, error) {
	if err := fileutil.MkdirSynced(s.cfg.Dir); err != nil {
		return Result{}, fmt.Errorf("snapshot: create %s: %w", s.cfg.Dir, err)
	}
	final := filepath.Join(s.cfg.Dir, Name(start))
	if err := s.checkSpace(); err != nil {
		return Result{}, fmt.Errorf("snapshot %s skipped: %w", final, err)
	}
	var c queue.Copy
	err := WriteChecked(ctx, final, "", func(f *os.File) (int, error) {
		var err error
		c, err = s.writeCopy(ctx, f)
		return c.Entries, err
	})
	if err != nil {
		return Result{}, fmt.Errorf("snapshot %s: %w", final, err)
	}
	return Result{Path: final, Bytes: c.Bytes, Entries: c.Entries}, nil
}

// checkSpace is nil when backup.dir's file system keeps enough free (see
// MinFreeBytes) once a copy of the database's size is written; otherwise
// ErrNoSpace with the numbers. A platform that cannot tell is not held
// back (the write's own disk-full error still stops a copy, which is
// removed).
func (s *Scheduler) checkSpace() error {
	need, err := s.src.CopySize()
	if err != nil {
		return fmt.Errorf("read the database's size: %w", err)
	}
	sp, err := fileutil.DiskSpace(s.cfg.Dir)
	if errors.Is(err, fileutil.ErrSpaceUnknown) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the free space of %s: %w", s.cfg.Dir, err)
	}
	keep := max(s.minFree, sp.Total/100*s.minFreePercent)
	if sp.Free < uint64(need)+keep {
		return fmt.Errorf("%w on the disk of %s: %s free, the copy takes %s, and %s must stay free (the larger of %s and %d%% of the disk)",
			ErrNoSpace, s.cfg.Dir, mib(sp.Free), mib(uint64(need)), mib(keep), mib(s.minFree), s.minFreePercent)
	}
	return nil
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// writeCopy writes the copy to f (WriteChecked's temporary file, which
// it fsyncs at the end), fsyncing every syncEvery bytes on the way.
func (s *Scheduler) writeCopy(ctx context.Context, f *os.File) (queue.Copy, error) {
	bw := bufio.NewWriterSize(&syncingWriter{f: f}, 1<<20)
	c, err := s.src.WriteCopy(ctx, bw)
	if err == nil {
		err = bw.Flush()
	}
	return c, err
}

// list returns the snapshots in Dir, oldest first.
func (s *Scheduler) list() ([]string, error) {
	des, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		if de.Type().IsRegular() && namePattern.MatchString(de.Name()) {
			names = append(names, de.Name())
		}
	}
	slices.Sort(names) // the UTC time in the name sorts by age
	return names, nil
}

// prune removes the oldest snapshots beyond cfg.Keep and leftover .tmp
// files of snapshots, never keep (the one just written).
func (s *Scheduler) prune(keep string) error {
	names, err := s.list()
	if err != nil {
		return err
	}
	var errs []error
	if n := len(names) - s.cfg.Keep; n > 0 {
		for _, name := range names[:n] {
			if p := filepath.Join(s.cfg.Dir, name); p != keep {
				errs = append(errs, os.Remove(p))
			}
		}
	}
	des, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return err
	}
	for _, de := range des {
		if name, ok := trimTmp(de.Name()); ok && namePattern.MatchString(name) {
			errs = append(errs, os.Remove(filepath.Join(s.cfg.Dir, de.Name())))
		}
	}
	return errors.Join(errs...)
}

func trimTmp(name string) (string, bool) {
	const suffix = ".tmp"
	if len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
		return name[:len(name)-len(suffix)], true
	}
	return "", false
}

// syncEvery is how much of a snapshot may be written before it is
// fsynced. Without it the whole copy (hundreds of MiB) sits dirty in the
// page cache until the final fsync, and on a journaling file system in
// ordered mode (ext4's default) the write-ahead log's fdatasync on the
// same disk can end up waiting behind its writeback: an accept then
// waits for the snapshot. Fsyncing as it goes bounds that wait to
// syncEvery's writeback (docs/decisions/snapshots.md has the figures).
const syncEvery = 2 << 20

// syncingWriter writes to f and fsyncs it every syncEvery bytes.
type syncingWriter struct {
	f       *os.File
	pending int
}

func (w *syncingWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.pending += n
	if err == nil && w.pending >= syncEvery {
		w.pending = 0
		err = w.f.Sync()
	}
	return n, err
}
