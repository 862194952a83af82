package store_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/store"
)

// openDir opens dir's database and closes it at cleanup.
func openDir(t *testing.T, dir string) *store.Store {
	t.Helper()
	s, err := store.OpenDir(dir, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newDataDir makes a data directory holding a database with one key.
func newDataDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	s := openDir(t, dir)
	put(t, s, "k", "v")
	require.NoError(t, s.Close())
	return dir
}

func markerID(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(layout.Marker(dir))
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id "); ok {
			return id
		}
	}
	t.Fatalf("no id in marker: %q", b)
	return ""
}

func TestOpenDirCreatesDatabaseAndMarker(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	id := markerID(t, dir)
	require.Len(t, id, 32)
	s := openDir(t, dir)
	got, err := s.ID()
	require.NoError(t, err)
	require.Equal(t, id, got)
	require.Equal(t, "v", get(t, s, "k"))
	require.NoFileExists(t, layout.Marker(dir)+".tmp")
}

// TestOpenDirRefusesLostDatabase: once a data directory has held a
// database, a missing, empty, truncated or replaced file is refused with
// the path named and nothing created in its place.
func TestOpenDirRefusesLostDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		breakIt func(t *testing.T, dir string)
		want    error
		say     string
	}{
		{"missing", func(t *testing.T, dir string) {
			require.NoError(t, os.Rename(layout.DB(dir), filepath.Join(dir, "elsewhere.db")))
		}, store.ErrMissing, "marker"},
		{"empty", func(t *testing.T, dir string) {
			require.NoError(t, os.Truncate(layout.DB(dir), 0))
		}, store.ErrMissing, "0 bytes"},
		{"truncated", truncateBelowUse, store.ErrCorrupt, "truncated"},
		{"replaced", func(t *testing.T, dir string) {
			other := newDataDir(t)
			copyFile(t, layout.DB(other), layout.DB(dir))
		}, store.ErrReplaced, "marker"},
		{"replaced by a file without an id", func(t *testing.T, dir string) {
			path := layout.DB(dir)
			require.NoError(t, os.Remove(path))
			s, err := store.Open(path, store.Options{})
			require.NoError(t, err)
			require.NoError(t, s.Close())
		}, store.ErrReplaced, "its id is none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newDataDir(t)
			path := layout.DB(dir)
			tc.breakIt(t, dir)
			before, _ := os.Stat(path)
			_, err := store.OpenDir(dir, store.Options{})
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tc.say)
			require.ErrorContains(t, err, "receiptd restore")
			after, _ := os.Stat(path)
			if before == nil {
				require.Nil(t, after, "no database may be created in place of a missing one")
			} else {
				require.Equal(t, before.Size(), after.Size(), "the file is left as it was")
			}
		})
	}
}

// truncateBelowUse cuts the database one page short of what its last
// transaction uses: bbolt would map it and crash with SIGBUS.
func truncateBelowUse(t *testing.T, dir string) {
	path := layout.DB(dir)
	s, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	for i := range 200 {
		put(t, s, strings.Repeat("k", 10)+string(rune('a'+i%26))+strings.Repeat("x", i), strings.Repeat("v", 1000))
	}
	var used int64
	require.NoError(t, s.View(func(tx *bbolt.Tx) error { used = tx.Size(); return nil }))
	require.NoError(t, s.Close())
	require.NoError(t, os.Truncate(path, used-4096))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o600))
}

// TestOpenRefusesTruncatedFile: plain Open (used for backup copies) checks
// the size before bbolt maps the file.
func TestOpenRefusesTruncatedFile(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	truncateBelowUse(t, dir)
	_, err := store.Open(layout.DB(dir), store.Options{})
	require.ErrorIs(t, err, store.ErrCorrupt)
	require.ErrorContains(t, err, "truncated")
}

// TestOpenDirAdoptsDatabaseWithoutMarker: a data directory written by a
// receiptd from before markers keeps working, and gets its marker.
func TestOpenDirAdoptsDatabaseWithoutMarker(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "old")
	s, err := store.Open(layout.DB(dir), store.Options{})
	require.NoError(t, err)
	put(t, s, "k", "v")
	require.NoError(t, s.Close())

	s = openDir(t, dir)
	require.Equal(t, "v", get(t, s, "k"))
	id, err := s.ID()
	require.NoError(t, err)
	require.Equal(t, markerID(t, dir), id)
}

// TestInitDir: -init creates a database where the old one is lost, and
// leaves a healthy one alone.
func TestInitDir(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	old := markerID(t, dir)
	created, err := store.InitDir(dir, store.Options{})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, old, markerID(t, dir), "a healthy database is kept")
	require.Equal(t, "v", get(t, openDir(t, dir), "k"))

	dir = newDataDir(t)
	require.NoError(t, os.Remove(layout.DB(dir)))
	created, err = store.InitDir(dir, store.Options{})
	require.NoError(t, err)
	require.True(t, created)
	s := openDir(t, dir)
	require.Empty(t, get(t, s, "k"))
	id, err := s.ID()
	require.NoError(t, err)
	require.Equal(t, markerID(t, dir), id)
}

// TestCheckIdentity: moving, deleting or replacing the open file makes
// every later Update fail with ErrMoved; reads keep working.
func TestCheckIdentity(t *testing.T) {
	t.Parallel()
	for name, act := range map[string]func(path string) error{
		"moved":   func(p string) error { return os.Rename(p, p+".moved") },
		"deleted": os.Remove,
		"replaced": func(p string) error {
			if err := os.Rename(p, p+".old"); err != nil {
				return err
			}
			return os.WriteFile(p, []byte("x"), 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := openDir(t, newDataDir(t))
			require.NoError(t, s.CheckIdentity())
			if runtime.GOOS == "windows" {
				// Windows refuses to move, delete or replace a file open
				// without FILE_SHARE_DELETE (as bbolt opens it): the case
				// cannot arise while the store is open.
				require.Error(t, act(s.Path()), "sharing violation")
				require.NoError(t, s.CheckIdentity())
				return
			}
			require.NoError(t, act(s.Path()))
			require.ErrorIs(t, s.CheckIdentity(), store.ErrMoved)
			require.ErrorIs(t, s.Err(), store.ErrMoved)
			err := s.Update(context.Background(), func(*bbolt.Tx) error { return nil })
			require.ErrorIs(t, err, store.ErrMoved)
			require.Equal(t, "v", get(t, s, "k"))
		})
	}
}

// TestCommitFindsMovedFile: with no other caller of CheckIdentity (the
// daemon looks only every 10 s), commits look at the file themselves: an
// Update within about a second of the move fails with ErrMoved, and Moved
// is closed for the daemon to say so.
func TestCommitFindsMovedFile(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows does not let an open database file be renamed")
	}
	s := openDir(t, newDataDir(t))
	put := func() error {
		return s.Update(context.Background(), func(tx *bbolt.Tx) error {
			return tx.Bucket(store.BucketMeta).Put([]byte("k2"), []byte("v"))
		})
	}
	require.NoError(t, put())
	select {
	case <-s.Moved():
		t.Fatal("Moved closed before anything moved")
	default:
	}
	require.NoError(t, os.Rename(s.Path(), s.Path()+".moved"))
	var err error
	require.Eventually(t, func() bool { err = put(); return err != nil }, 3*time.Second, 20*time.Millisecond)
	require.ErrorIs(t, err, store.ErrMoved)
	select {
	case <-s.Moved():
	case <-time.After(time.Second):
		t.Fatal("Moved not closed")
	}
}

// TestOpenOptionsPinned pins the bbolt options every commit's durability
// rests on: a store opened with NoSync passes every kill -9 test.
func TestOpenOptionsPinned(t *testing.T) {
	t.Parallel()
	s := openDir(t, t.TempDir())
	db := s.Bolt()
	require.False(t, db.NoSync, "NoSync: a commit would not be fsynced")
	require.False(t, db.NoGrowSync, "NoGrowSync: a grown file size would not be fsynced first")
	require.False(t, db.NoFreelistSync, "NoFreelistSync: see the package doc")
	require.Equal(t, bbolt.FreelistArrayType, db.FreelistType)
	require.False(t, db.IsReadOnly())
	require.Zero(t, db.MmapFlags, "MAP_POPULATE and friends are not used")
	require.False(t, db.StrictMode)
}

// TestOpenDirRefusesOlderCopy: a copy of the data directory's own database
// taken earlier (a backup) and put back in place has the right id but an
// older newest transaction than the marker records: it would send again
// what was sent since, so it is refused.
func TestOpenDirRefusesOlderCopy(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	path := layout.DB(dir)
	s := openDir(t, dir)
	var copied bytes.Buffer
	_, err := s.Backup(&copied)
	require.NoError(t, err)
	put(t, s, "sent since", "yes")
	require.NoError(t, s.Close()) // records the newest transaction
	require.NoError(t, os.WriteFile(path, copied.Bytes(), 0o600))

	_, err = store.OpenDir(dir, store.Options{})
	require.ErrorIs(t, err, store.ErrReplaced)
	require.ErrorContains(t, err, "older copy")
	require.ErrorContains(t, err, "receiptd restore")
}

// TestSaveMarkerFollowsCommits: the marker's transaction moves with durable
// commits, and a database reopened after them is accepted.
func TestSaveMarkerFollowsCommits(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	s := openDir(t, dir)
	put(t, s, "a", "1")
	require.NoError(t, s.SaveMarker())
	b, err := os.ReadFile(layout.Marker(dir))
	require.NoError(t, err)
	require.Contains(t, string(b), "tx "+strconv.FormatUint(s.TxID(), 10)+"\n")
	put(t, s, "b", "2")
	require.NoError(t, s.Close())
	openDir(t, dir) // kill -9 or not, the file is never older than the marker
}
