package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/receiptd/receiptd/internal/layout"
)

// FuzzCheckSize feeds checkSize any file start: it reads the file's own
// meta pages, which a damaged file may fill with anything, and must answer
// with an error or nil, never panic or read out of bounds.
func FuzzCheckSize(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(layout.DB(dir), Options{})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	db, err := os.ReadFile(layout.DB(dir))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(db)
	f.Add(db[:len(db)/2])
	f.Add(db[:100])
	f.Add([]byte("not a database"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_ = checkSize(path)
	})
}

// FuzzReadMarker: a marker file with any content is read or refused with
// an error, never a panic; an id it reports is never empty.
func FuzzReadMarker(f *testing.F) {
	f.Add([]byte(markerHead + "id 0123456789abcdef0123456789abcdef\ntx 42\n"))
	f.Add([]byte("id x\n"))
	f.Add([]byte("tx -1\nid y\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(layout.Marker(dir), b, 0o600); err != nil {
			t.Fatal(err)
		}
		mk, err := readMarker(dir)
		if err == nil && mk.id == "" {
			t.Fatalf("marker %q read without an id", b)
		}
	})
}
