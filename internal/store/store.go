package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/receiptd/receiptd/internal/fileutil"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Sentinel errors. Every error returned by this package that matches one of
// these also names the file and the operation.
var (
	// ErrLocked means another process holds the database file open.
	ErrLocked = errors.New("database is locked by another process")
	// ErrCorrupt means the file is damaged or unreadable. The file is left
	// untouched. (A schema newer than this program knows is ErrNewerSchema.)
	ErrCorrupt = errors.New("database is damaged or unreadable")
	// ErrDiskFull means an Update could not be made durable because the disk
	// or the file cannot grow (ENOSPC, EFBIG, EDQUOT). Nothing of that Update
	// is stored; the database stays consistent and usable.
	ErrDiskFull = errors.New("disk full: the database cannot grow")
	// ErrFailed means an earlier commit failed in a way that leaves the
	// in-memory state untrustworthy; the Store must be closed and reopened.
	ErrFailed = errors.New("database write failed earlier; reopen required")
	// ErrClosed means the Store has been closed.
	ErrClosed = errors.New("database is closed")
)

// Bucket names created by the schema. The store owns their existence; the
// named package owns what is inside.
var (
	// BucketMeta holds store metadata such as the schema version.
	BucketMeta = []byte("meta")
	// BucketCache is reserved for the lookup cache package.
	BucketCache = []byte("cache")
	// BucketQueue is reserved for the queue package.
	BucketQueue = []byte("queue")
)

var keySchema = []byte("schema")

// Options configures Open. The zero value is ready to use.
type Options struct {
	// LockTimeout bounds the wait for the file lock. Zero means 2s; a
	// negative value means one attempt only (bbolt's shortest retry step).
	LockTimeout time.Duration
	// InitialMmapSize is the size of the first memory mapping in bytes.
	// Zero means 64 MiB; a negative value means bbolt's default (the file
	// size).
	InitialMmapSize int
	// SkipCheckOnOpen skips the full consistency check at open. Zero (false)
	// means Open walks every page with bbolt's checker and refuses a damaged
	// file with ErrCorrupt.
	SkipCheckOnOpen bool
	// MaxGroup caps how many Update calls share one commit. Zero means 1024.
	MaxGroup int
	// Existing refuses (ErrCorrupt) a file that is not already a receiptd
	// database: missing, empty, or a bbolt file without receiptd's schema,
	// which Open would otherwise make a new, empty database. Backup and
	// restore open their copies so.
	Existing bool
	// OnCommit, when set, is told the duration (fsyncs included) and the
	// number of Update calls of every successful commit, for metrics. Nil
	// means nobody is told. It must not block.
	OnCommit func(d time.Duration, updates int)
	// NoMigrate refuses (ErrMigrationRefused) a database of an older
	// schema instead of migrating it: a release on probation must leave
	// the file one the version it may roll back to can open. A new, empty
	// file is still set up.
	NoMigrate bool
}

const (
	defaultLockTimeout = 2 * time.Second
	defaultMmapSize    = 64 << 20
	defaultMaxGroup    = 1024
)

// Store is an open receiptd database. It is safe for concurrent use.
type Store struct {
	db       *bbolt.DB
	path     string
	opened   os.FileInfo // the file as it was when opened, for CheckIdentity
	maxGroup int
	onCommit func(d time.Duration, updates int)

	// identityAt is when a commit last ran CheckIdentity (unix ns).
	identityAt atomic.Int64
	commits    atomic.Uint64 // successful group commits
	updates    atomic.Uint64 // Update calls made durable
	lastTx     atomic.Uint64 // id of the newest durable transaction
	// openedTx is the newest transaction id in the file as opened, before
	// any migration; OpenDir compares it with the marker.
	openedTx uint64
	marker   *marker // the data directory's marker; nil unless opened by OpenDir

	mu      sync.Mutex
	pending []*call
	leading bool  // a caller is running the commit loop
	failed  error // set once a commit fails in an unrecoverable way
	// diskFull is the last commit's ErrDiskFull, nil once a commit
	// succeeds; diskFullSince is when the run of such failures began.
	diskFull      error
	diskFullSince time.Time
	closed        bool
	movedCh       chan struct{} // closed once CheckIdentity finds ErrMoved; made on first use
	committed     chan struct{} // capacity 1: signalled after commits (Committed)
}

// Open opens or creates the database at path, creating its directory if
// needed, then runs schema migrations. See ErrLocked and ErrCorrupt.
func Open(path string, opts Options) (s *Store, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open database %s: create directory: %w", path, err)
	}
	bo := boltOptions(opts)
	defer func() {
		// A badly damaged file can make bbolt panic while reading pages.
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("open database %s: %w: %s", path, ErrCorrupt, describeDamage(1, r))
		}
	}()
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		if err := checkSize(path); err != nil {
			return nil, err
		}
	} else if opts.Existing {
		return nil, fmt.Errorf("open database %s: %w: the file is missing or empty, not a receiptd database", path, ErrCorrupt)
	}
	checked, err := checkBeforeWriting(path, opts, bo)
	if err != nil {
		return nil, err
	}
	db, err := bbolt.Open(path, 0o600, bo)
	if err != nil {
		return nil, classifyOpenError(path, err)
	}
	s = &Store{db: db, path: path, maxGroup: opts.MaxGroup, onCommit: opts.OnCommit,
		committed: make(chan struct{}, 1)}
	// bbolt holds the file open from here on, so its identity (device and
	// inode) cannot be reused by another file while the Store lives.
	if s.opened, err = os.Stat(path); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	_ = db.View(func(tx *bbolt.Tx) error {
		s.openedTx = uint64(tx.ID())
		return nil
	})
	s.lastTx.Store(s.openedTx)
	if s.maxGroup <= 0 {
		s.maxGroup = defaultMaxGroup
	}
	if !opts.SkipCheckOnOpen && !checked {
		if err := s.Check(); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("open database: %w", err)
		}
	}
	if err := s.refuseForeign(opts); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.migrate(opts.NoMigrate); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// refuseForeign refuses, with opts.Existing, a file without receiptd's
// schema version: an empty bbolt file or another program's.
func (s *Store) refuseForeign(opts Options) error {
	if !opts.Existing {
		return nil
	}
	version, err := s.knownSchema()
	if err != nil {
		return err
	}
	if version == 0 {
		return fmt.Errorf("open database %s: %w: a bbolt file without receiptd's schema, not a receiptd database", s.path, ErrCorrupt)
	}
	return nil
}

func boltOptions(opts Options) *bbolt.Options {
	bo := &bbolt.Options{
		Timeout:        opts.LockTimeout,
		FreelistType:   bbolt.FreelistArrayType,
		NoFreelistSync: false,
		NoGrowSync:     false,
		NoSync:         fileutil.UnsafeNoSync, // false unless built with receiptd_nosync_unsafe
	}
	switch {
	case opts.LockTimeout == 0:
		bo.Timeout = defaultLockTimeout
	case opts.LockTimeout < 0:
		bo.Timeout = time.Millisecond
	}
	switch {
	case opts.InitialMmapSize == 0:
		bo.InitialMmapSize = defaultMmapSize
	case opts.InitialMmapSize > 0:
		bo.InitialMmapSize = opts.InitialMmapSize
	}
	return bo
}

func classifyOpenError(path string, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("open database %s: %w (is another receiptd running on this data directory?)", path, ErrLocked)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum):
		return fmt.Errorf("open database %s: %w: pages 0 and 1, which say where everything else is, "+
			"are both damaged (%v)", path, ErrCorrupt, err)
	case errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping):
		return fmt.Errorf("open database %s: %w: %v", path, ErrCorrupt, err)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	// bbolt reports short or garbled files with ad-hoc errors; anything else
	// that fails while reading the file is damage, never a reason to start over.
	return fmt.Errorf("open database %s: %w: %v", path, ErrCorrupt, err)
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close waits for the commit in flight, then closes the file. Update calls
// made after Close return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	merr := s.SaveMarker() // no commit runs any more: the last one is recorded
	if err := s.db.Close(); err != nil {
		return errors.Join(fmt.Errorf("close database %s: %w", s.path, err), merr)
	}
	return merr
}

// TxID is the id of the newest durable transaction (bbolt's txid).
func (s *Store) TxID() uint64 { return s.lastTx.Load() }

// View runs fn in a read-only transaction. Values read inside fn are valid
// only until fn returns. A damaged page met on the way (bbolt panics on
// one) is ErrCorrupt naming the file, and fails the Store (Fail): what a
// damaged database acknowledges cannot be trusted, so writes stop, as
// after a failed commit, instead of the process crashing.
func (s *Store) View(fn func(tx *bbolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("read %s: %w: %s", s.path, ErrCorrupt, describeDamage(1, r))
			s.Fail(err)
		}
	}()
	if err := s.db.View(fn); err != nil {
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			return fmt.Errorf("read %s: %w", s.path, ErrClosed)
		}
		return err
	}
	return nil
}

// Check runs bbolt's consistency check over every page. Problems are
// reported as ErrCorrupt naming the file.
func (s *Store) Check() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("check database %s: %w: %s", s.path, ErrCorrupt, describeDamage(1, r))
		}
	}()
	var problems []any // the first 10 of found
	found := 0
	verr := s.db.View(func(tx *bbolt.Tx) error {
		for e := range tx.Check() {
			found++
			if len(problems) < 10 {
				problems = append(problems, e)
			}
		}
		return nil
	})
	if verr != nil {
		return fmt.Errorf("check database %s: %w", s.path, verr)
	}
	if len(problems) > 0 {
		return fmt.Errorf("check database %s: %w: %s", s.path, ErrCorrupt, describeDamage(found, problems...))
	}
	return nil
}

// SchemaVersion is the layout this program writes. Files with a higher
// version are refused with ErrNewerSchema; SchemaReleases (schema.go)
// names the release that first wrote each version.
const SchemaVersion = 3

// migrations[i] upgrades a file from version i to i+1, inside one
// transaction together with the version bump.
var migrations = []func(tx *bbolt.Tx) error{
	func(tx *bbolt.Tx) error { // 0 → 1: the top-level buckets.
		for _, b := range [][]byte{BucketMeta, BucketCache, BucketQueue} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	},
	// 1 → 2: nothing for the store to change. The queue gained an unindexed
	// tail of new receipts (queue.Open sets it up); a program that knows
	// only schema 1 would never send those receipts, so it must refuse the
	// file, and the version says so.
	func(*bbolt.Tx) error { return nil },
	// 2 → 3: nothing for the store to change. The queue writes its entries
	// as compact records (queue/record.go) and keeps the write-ahead log's
	// mark; a program that knows only schema 2 could read neither, so it
	// must refuse the file. Entries written before stay as they are.
	func(*bbolt.Tx) error { return nil },
}

func (s *Store) migrate(refuse bool) error {
	version, err := s.knownSchema()
	if err != nil {
		return err
	}
	if refuse && version > 0 && version < SchemaVersion {
		return fmt.Errorf("open database %s: %w (schema %d to %d): install this release with the package manager, not `receiptd update apply`",
			s.path, ErrMigrationRefused, version, SchemaVersion)
	}
	for v := version; v < SchemaVersion; v++ {
		step := migrations[v]
		err := s.Update(context.Background(), func(tx *bbolt.Tx) error {
			if err := step(tx); err != nil {
				return err
			}
			b := tx.Bucket(BucketMeta)
			if b == nil {
				return fmt.Errorf("meta bucket missing after migration")
			}
			return b.Put(keySchema, binary.BigEndian.AppendUint64(nil, v+1))
		})
		if err != nil {
			return fmt.Errorf("open database %s: migrate schema %d→%d: %w", s.path, v, v+1, err)
		}
	}
	if err := s.recordRelease(); err != nil {
		return fmt.Errorf("open database %s: record the schema's release: %w", s.path, err)
	}
	return nil
}

// knownSchema reads the file's schema version and refuses one newer than
// this program's.
func (s *Store) knownSchema() (uint64, error) {
	var version uint64
	err := s.View(func(tx *bbolt.Tx) (err error) {
		version, err = readSchema(tx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("open database %s: read schema: %w", s.path, err)
	}
	if version > SchemaVersion {
		return 0, s.newerSchema(version)
	}
	return version, nil
}

func readSchema(tx *bbolt.Tx) (uint64, error) {
	b := tx.Bucket(BucketMeta)
	if b == nil {
		return 0, nil
	}
	v := b.Get(keySchema)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: schema version has %d bytes, want 8", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// CheckIdentity reports ErrMoved when the path no longer names the file
// that was opened: it was moved, deleted or replaced. From then on every
// Update fails with that error (nothing can be acknowledged into a file
// nobody will open again); reads still work, so the data can be rescued
// with a backup while the process lives. It is cheap (one stat). Every
// commit calls it when the last call is a second old or more, so nothing
// is acknowledged into a file moved more than a second before, without a
// timer that would wake an idle daemon every second.
func (s *Store) CheckIdentity() error {
	if s.opened == nil {
		return nil // read-only (OpenReadOnly): no write to guard
	}
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	if failed != nil && errors.Is(failed, ErrMoved) {
		return failed
	}
	fi, err := os.Stat(s.path)
	if err == nil && os.SameFile(fi, s.opened) {
		return nil
	}
	what := "replaced by another file"
	if err != nil {
		what = "missing: " + err.Error()
	}
	moved := fmt.Errorf("update %s: %w: the path is %s", s.path, ErrMoved, what)
	s.mu.Lock()
	if s.failed == nil || !errors.Is(s.failed, ErrMoved) {
		s.failed = moved
		close(s.movedLocked())
	}
	failed = s.failed
	s.mu.Unlock()
	return failed
}

// Moved returns a channel that is closed once CheckIdentity has found
// that the path no longer names the opened file, whoever called it (a
// commit checks at most a second after the last check: commit.go).
func (s *Store) Moved() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.movedLocked()
}

func (s *Store) movedLocked() chan struct{} {
	if s.movedCh == nil {
		s.movedCh = make(chan struct{})
	}
	return s.movedCh
}

// Committed returns a channel that receives a value after a commit made
// something durable. It never holds up a commit: several commits may
// share one value, and nothing is sent while one waits unread. A read-only
// store never sends.
func (s *Store) Committed() <-chan struct{} { return s.committed }

// Err returns the error every Update now fails with (ErrFailed, ErrMoved),
// or nil while writes work.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Closed reports whether Close has been called.
func (s *Store) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Stats counts durable work since Open.
type Stats struct {
	Commits uint64 // fsynced bbolt commits made by Update
	Updates uint64 // Update calls those commits made durable
}

// Stats returns counters since Open; Updates/Commits is the mean group size.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Updates: s.updates.Load()}
}
