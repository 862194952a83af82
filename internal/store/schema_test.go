package store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// writeNewer makes a database as a newer receiptd would: schema version v
// and, when release is set, the release that first wrote it.
func writeNewer(t *testing.T, path string, v uint64, release string) {
	t.Helper()
	s, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Update(context.Background(), func(tx *bbolt.Tx) error {
		b := tx.Bucket(store.BucketMeta)
		if release != "" {
			if err := b.Put([]byte("schema_release"), []byte(release)); err != nil {
				return err
			}
		} else if err := b.Delete([]byte("schema_release")); err != nil {
			return err
		}
		return b.Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, v))
	}))
	require.NoError(t, s.Close())
}

func TestNewerSchemaIsRefusedNamingTheRelease(t *testing.T) {
	cases := []struct {
		name, release string
		want          []string
	}{
		{"the file names its release", "1.4.0 of 2027-03-01", []string{
			"written by a newer receiptd", "schema version 4; this receiptd reads up to 3",
			"install receiptd 1.4.0 of 2027-03-01 or later", "not damaged and was not changed"}},
		{"the file does not say", "", []string{
			"written by a newer receiptd", "install the receiptd release that last ran on this data directory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "receiptd.db")
			writeNewer(t, path, store.SchemaVersion+1, tc.release)
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			for _, open := range []func() (*store.Store, error){
				func() (*store.Store, error) { return store.Open(path, store.Options{LockTimeout: time.Second}) },
				func() (*store.Store, error) { return store.OpenReadOnly(path) },
			} {
				_, err = open()
				require.ErrorIs(t, err, store.ErrNewerSchema)
				require.NotErrorIs(t, err, store.ErrCorrupt, "a newer file is not damaged")
				require.NotContains(t, err.Error(), "damaged or")
				require.Contains(t, err.Error(), path)
				for _, w := range tc.want {
					require.Contains(t, err.Error(), w)
				}
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.Equal(before, after), "a refused file must be left as it was")
		})
	}
}

// TestOpenRecordsTheSchemasRelease: a file opened by this receiptd tells a
// later, older one which release to install.
func TestOpenRecordsTheSchemasRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receiptd.db")
	writeNewer(t, path, store.SchemaVersion, "") // a file from before the key
	s, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	var got string
	require.NoError(t, s.View(func(tx *bbolt.Tx) error {
		got = string(tx.Bucket(store.BucketMeta).Get([]byte("schema_release")))
		return nil
	}))
	require.NoError(t, s.Close())
	last := store.SchemaReleases[len(store.SchemaReleases)-1]
	require.Equal(t, uint64(store.SchemaVersion), last.Version, "SchemaReleases must end with SchemaVersion")
	require.Equal(t, last.Release+" of "+last.Date, got)
}

func TestSchemaReleasesHasEveryVersion(t *testing.T) {
	for i, r := range store.SchemaReleases {
		require.Equal(t, uint64(i+1), r.Version)
		require.NotEmpty(t, r.Release)
		_, err := time.Parse("2006-01-02", r.Date)
		require.NoError(t, err)
	}
}

func TestOpenReadOnlyChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receiptd.db")
	s, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	ro, err := store.OpenReadOnly(path)
	require.NoError(t, err)
	require.NoError(t, ro.Check())
	require.NoError(t, ro.Close())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after))

	empty := filepath.Join(t.TempDir(), "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	_, err = store.OpenReadOnly(empty)
	require.ErrorIs(t, err, store.ErrCorrupt)
}

// TestNoMigrateRefusesAnOlderSchema: a release on probation (NoMigrate)
// leaves a file of an older schema as it was, saying to install the
// release with the package manager; a new file is still set up, and the
// same file opens and migrates without NoMigrate.
func TestNoMigrateRefusesAnOlderSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	writeNewer(t, path, store.SchemaVersion-1, "")
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = store.Open(path, store.Options{NoMigrate: true})
	require.ErrorIs(t, err, store.ErrMigrationRefused)
	require.Contains(t, err.Error(), "package manager")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after), "a refused file must be left as it was")

	s, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = store.Open(path, store.Options{NoMigrate: true})
	require.NoError(t, err, "a file of this schema opens on probation")
	require.NoError(t, s.Close())

	s, err = store.Open(filepath.Join(t.TempDir(), "receiptd.db"), store.Options{NoMigrate: true})
	require.NoError(t, err, "a new file is set up on probation")
	require.NoError(t, s.Close())
}
