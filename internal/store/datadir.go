package store

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/layout"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The data directory remembers its database: beside the file sits a marker
// holding the database's identity, a random id also kept in the database's
// meta bucket. A missing or empty database where the marker says there was
// one, or a database whose id is not the marker's, is refused at start, so
// receiptd never carries on with a fresh empty queue in place of one that
// held acknowledged receipts. The two names are layout's DBFile and
// MarkerFile.

// Errors of OpenDir. Each is wrapped with the file's path and what to do.
var (
	// ErrMissing means the data directory's marker says it holds a
	// database, but the file is missing or empty (0 bytes).
	ErrMissing = errors.New("database file is missing or empty")
	// ErrReplaced means the database file is not the one the data
	// directory's marker names: it was replaced by another file.
	ErrReplaced = errors.New("database file is not the one this data directory held")
	// ErrMoved means the open database file was moved, deleted or replaced
	// on disk while receiptd had it open (see CheckIdentity). Every later
	// Update fails with it.
	ErrMoved = errors.New("database file was moved, deleted or replaced while in use")
)

var keyID = []byte("id")

// recovery is the advice every refusal of OpenDir ends with.
const recovery = "put the right file back, restore a backup with `receiptd restore FILE`, " +
	"or start over with an empty queue with `receiptd run -init` (acknowledged receipts in the lost file are then not sent)"

// OpenDir opens the database of data directory dir (layout.DB), guarded by
// its marker (layout.Marker):
//   - no marker and no database (a new data directory): creates both;
//   - a database but no marker (written by a receiptd from before markers):
//     opens it and writes the marker;
//   - a marker but no database, or an empty one: ErrMissing;
//   - a database whose id is not the marker's: ErrReplaced;
//   - a database shorter than its own meta page says: ErrCorrupt.
//
// The directory is fsynced after the database file or the marker is
// created, so a power cut cannot take the new names away (not on Windows,
// which cannot fsync a directory; NTFS journals the names itself).
func OpenDir(dir string, opts Options) (*Store, error) {
	path := layout.DB(dir)
	mk, err := readMarker(dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && mk.id != "":
		return nil, fmt.Errorf("open database %s: %w: the data directory's marker %s says it held database %s; %s",
			path, ErrMissing, layout.Marker(dir), mk.id, recovery)
	case errors.Is(err, fs.ErrNotExist):
		return createDir(dir, opts)
	case err != nil:
		return nil, fmt.Errorf("open database %s: %w", path, err)
	case fi.Size() == 0:
		return nil, fmt.Errorf("open database %s: %w: the file is empty (0 bytes); %s", path, ErrMissing, recovery)
	}
	s, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	if err := s.adopt(dir, mk); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// adopt checks the open database against the marker, giving a database
// from before markers its id, and records the marker for SaveMarker.
func (s *Store) adopt(dir string, mk markerFile) error {
	id, err := s.ID()
	if err != nil {
		return err
	}
	switch {
	case mk.id != "" && id != mk.id:
		if id == "" {
			id = "none"
		}
		return fmt.Errorf("open database %s: %w: its id is %s, but the data directory's marker %s says %s; %s",
			s.path, ErrReplaced, id, layout.Marker(dir), mk.id, recovery)
	case mk.id != "" && s.openedTx < mk.tx:
		return fmt.Errorf("open database %s: %w: it is an older copy of this data directory's database "+
			"(transaction %d; the directory has seen %d), such as a backup copied into place, and would send again "+
			"what was sent since; put a backup back with `receiptd restore FILE`, which holds what may have been sent",
			s.path, ErrReplaced, s.openedTx, mk.tx)
	case mk.id == "" && id == "":
		if id, err = s.setNewID(); err != nil {
			return err
		}
	}
	s.marker = &marker{dir: dir, id: id, tx: mk.tx}
	return s.saveMarker(mk.id == "") // a missing marker is written now
}

// createDir creates a new database and its marker in dir.
func createDir(dir string, opts Options) (*Store, error) {
	path := layout.DB(dir)
	if err := fileutil.MkdirSynced(dir); err != nil {
		return nil, fmt.Errorf("open database %s: create the data directory: %w", path, err)
	}
	s, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Store, error) {
		_ = s.Close()
		return nil, err
	}
	id, err := s.setNewID()
	if err != nil {
		return fail(err)
	}
	// The file's name first, then the marker: a power cut between the two
	// leaves a database without a marker, which the next start adopts.
	if err := fileutil.SyncDir(dir); err != nil {
		return fail(fmt.Errorf("open database %s: %w", path, err))
	}
	s.marker = &marker{dir: dir, id: id}
	if err := s.saveMarker(true); err != nil {
		return fail(err)
	}
	return s, nil
}

// InitDir makes dir hold a new, empty database when it holds none: the
// file is missing (whatever the marker says) or empty. A database already
// there is left alone and checked as OpenDir checks it. It is `receiptd run
// -init`: the operator's explicit word that an empty queue is right.
// created reports that a new database was made.
func InitDir(dir string, opts Options) (created bool, err error) {
	path := layout.DB(dir)
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.Size() > 0:
		s, err := OpenDir(dir, opts)
		if err != nil {
			return false, err
		}
		return false, s.Close()
	case err == nil:
		if err := os.Remove(path); err != nil {
			return false, fmt.Errorf("init database %s: remove the empty file: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("init database %s: %w", path, err)
	}
	if err := os.Remove(layout.Marker(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("init database %s: remove the old marker: %w", path, err)
	}
	s, err := createDir(dir, opts)
	if err != nil {
		return false, err
	}
	return true, s.Close()
}

// ID returns the database's identity ("" for a file from before markers).
func (s *Store) ID() (string, error) {
	var id string
	err := s.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(BucketMeta); b != nil {
			id = string(b.Get(keyID))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read database id of %s: %w", s.path, err)
	}
	return id, nil
}

// setNewID gives the database a new random identity.
func (s *Store) setNewID() (string, error) {
	id := NewID()
	err := s.Update(context.Background(), func(tx *bbolt.Tx) error {
		return tx.Bucket(BucketMeta).Put(keyID, []byte(id))
	})
	if err != nil {
		return "", fmt.Errorf("write database id of %s: %w", s.path, err)
	}
	return id, nil
}

// SetID gives the database the identity id (restore uses it to make a
// restored copy a database of its own).
func (s *Store) SetID(ctx context.Context, id string) error {
	err := s.Update(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(BucketMeta).Put(keyID, []byte(id))
	})
	if err != nil {
		return fmt.Errorf("write database id of %s: %w", s.path, err)
	}
	return nil
}

// NewID returns a new random database identity.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

const markerHead = "# receiptd: this data directory holds the database " + layout.DBFile + " with the id below. Do not delete.\n"

// marker is a data directory's marker: the database's id, and the newest
// transaction id the directory is known to have made durable (0 when
// unknown). A database file whose own newest transaction is older is a
// copy put back, not the directory's database.
type marker struct {
	dir string
	id  string
	mu  sync.Mutex // serializes saves; guards tx
	tx  uint64
}

// markerFile is what a marker file says.
type markerFile struct {
	id string // "" when there is no marker
	tx uint64
}

// readMarker returns what dir's marker says.
func readMarker(dir string) (markerFile, error) {
	path := layout.Marker(dir)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return markerFile{}, nil
	}
	if err != nil {
		return markerFile{}, fmt.Errorf("read marker %s: %w", path, err)
	}
	defer f.Close()
	var mk markerFile
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch val = strings.TrimSpace(val); key {
		case "id":
			mk.id = val
		case "tx":
			if mk.tx, err = strconv.ParseUint(val, 10, 64); err != nil {
				return markerFile{}, fmt.Errorf("read marker %s: %w: tx %q", path, ErrCorrupt, val)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return markerFile{}, fmt.Errorf("read marker %s: %w", path, err)
	}
	if mk.id == "" {
		return markerFile{}, fmt.Errorf("read marker %s: %w: no id line; %s", path, ErrCorrupt, recovery)
	}
	return mk, nil
}

// SaveMarker records the newest durable transaction in the data
// directory's marker when it has moved on since the last save (see
// marker). The daemon calls it every few seconds and Close calls it last.
// It does nothing for a store not opened by OpenDir, or once the file was
// moved away (ErrMoved).
func (s *Store) SaveMarker() error { return s.saveMarker(false) }

func (s *Store) saveMarker(always bool) error {
	m := s.marker
	if m == nil || errors.Is(s.Err(), ErrMoved) {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := s.lastTx.Load()
	if tx <= m.tx && !always {
		return nil
	}
	if err := WriteMarker(m.dir, m.id, tx); err != nil {
		return err
	}
	m.tx = tx
	return nil
}

// WriteMarker replaces dir's marker with one naming id and transaction tx,
// durably: a temporary file, fsynced, renamed over the marker, then the
// directory fsynced.
func WriteMarker(dir, id string, tx uint64) error {
	path := layout.Marker(dir)
	err := fileutil.WriteFileAtomic(path, []byte(markerHead+"id "+id+"\ntx "+strconv.FormatUint(tx, 10)+"\n"), 0o600)
	if err != nil {
		return fmt.Errorf("write marker %s: %w", path, err)
	}
	return nil
}

// ProbeLock returns ErrLocked, naming the file, when another process holds
// the database at path open (a running receiptd); nil when the file is free,
// missing, or too damaged to be opened by anyone.
func ProbeLock(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if checkSize(path) != nil {
		return nil // bbolt cannot map it, so no receiptd has it open
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("database %s: %w (is receiptd running? stop it first)", path, ErrLocked)
	}
	if err == nil {
		_ = db.Close()
	}
	return nil
}
