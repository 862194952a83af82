package store

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"
)

// ErrNewerSchema means the file was written by a newer receiptd, whose
// layout this program does not know. The file is not damaged, and Open
// leaves it untouched: the way on is the release the error names (or a
// later one). It is not ErrCorrupt, so nobody is sent to restore a backup
// or start an empty database over a good one.
var ErrNewerSchema = errors.New("database was written by a newer receiptd")

// ErrMigrationRefused means Options.NoMigrate refused to migrate a file of
// an older schema: a release on probation never changes the database's
// schema, which the version it may roll back to could not read.
var ErrMigrationRefused = errors.New("this release would migrate the database while on probation")

// SchemaRelease names the first release of receiptd that wrote a schema
// version.
type SchemaRelease struct {
	Version uint64
	Release string // the release's name (its commit until releases are tagged)
	Date    string // its date, yyyy-mm-dd
}

// SchemaReleases has one row per schema version, oldest first; the last
// row is SchemaVersion. A change of SchemaVersion adds a row naming the
// release that ships it, and docs/operations.md's table with it. (Found
// with `git log -S "SchemaVersion = N" -- internal/store/store.go` and the
// landed releases: schema 1 from eeef14f, 2 from 1064809, 3 from 7248285.)
var SchemaReleases = []SchemaRelease{
	{Version: 1, Release: "a0959c8", Date: "2026-11-22"},
	{Version: 2, Release: "d6a4b47", Date: "2026-11-22"},
	{Version: 3, Release: "271721b", Date: "2026-11-26"},
}

// keySchemaRelease, in BucketMeta, names the first release that wrote the
// file's schema version ("271721b of 2026-11-26"). An older receiptd
// cannot know the releases made after it, so the file tells it which one
// to install.
var keySchemaRelease = []byte("schema_release")

// releaseOf is the first release that wrote schema version v, as written
// in keySchemaRelease; "" when unknown.
func releaseOf(v uint64) string {
	for _, r := range SchemaReleases {
		if r.Version == v {
			return r.Release + " of " + r.Date
		}
	}
	return ""
}

// NewerSchemaError is ErrNewerSchema with what the operator needs: the
// file, its schema, the newest this program reads, and the release to
// install (read from the file; empty when the file does not say).
type NewerSchemaError struct {
	Path           string
	Version, Known uint64
	Release        string
}

func (e *NewerSchemaError) Error() string {
	install := "install the receiptd release that last ran on this data directory, or a later one"
	if e.Release != "" {
		install = "install receiptd " + e.Release + " or later (the first release that writes schema " +
			fmt.Sprint(e.Version) + ")"
	}
	return fmt.Sprintf("open database %s: %v (schema version %d; this receiptd reads up to %d): %s; "+
		"the file is not damaged and was not changed", e.Path, ErrNewerSchema, e.Version, e.Known, install)
}

func (e *NewerSchemaError) Unwrap() error { return ErrNewerSchema }

// newerSchema builds the refusal of a file of schema version v.
func (s *Store) newerSchema(v uint64) error {
	var release string
	_ = s.db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(BucketMeta); b != nil {
			release = string(b.Get(keySchemaRelease))
		}
		return nil
	})
	return &NewerSchemaError{Path: s.path, Version: v, Known: SchemaVersion, Release: release}
}

// recordRelease writes keySchemaRelease for this program's schema version
// when the file does not say it yet (once, at the first open by a release
// that knows it).
func (s *Store) recordRelease() error {
	want := releaseOf(SchemaVersion)
	var have string
	if err := s.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(BucketMeta); b != nil {
			have = string(b.Get(keySchemaRelease))
		}
		return nil
	}); err != nil || have == want {
		return err
	}
	return s.Update(context.Background(), func(tx *bbolt.Tx) error {
		b := tx.Bucket(BucketMeta)
		if b == nil {
			return fmt.Errorf("meta bucket missing")
		}
		return b.Put(keySchemaRelease, []byte(want))
	})
}
