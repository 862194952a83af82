package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

var testBucket = []byte("test")

func put(t *testing.T, s *store.Store, key, value string) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(testBucket)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), []byte(value))
	}))
}

func get(t *testing.T, s *store.Store, key string) string {
	t.Helper()
	var v []byte
	require.NoError(t, s.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket(testBucket); b != nil {
			v = append(v, b.Get([]byte(key))...)
		}
		return nil
	}))
	return string(v)
}

func TestOpenCreatesDirectoryAndSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a", "b", "receiptd.db")
	s := storetest.OpenPath(t, path)
	require.Equal(t, path, s.Path())
	require.NoError(t, s.View(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{store.BucketMeta, store.BucketCache, store.BucketQueue} {
			require.NotNil(t, tx.Bucket(b), "bucket %s", b)
		}
		v := tx.Bucket(store.BucketMeta).Get([]byte("schema"))
		require.Equal(t, uint64(store.SchemaVersion), binary.BigEndian.Uint64(v))
		return nil
	}))
	put(t, s, "k", "v")
	require.NoError(t, s.Close())

	s2 := storetest.OpenPath(t, path) // reopening keeps data and runs no migration twice
	require.Equal(t, "v", get(t, s2, "k"))
}

func TestOpenLockedNamesFileAndReturns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	storetest.OpenPath(t, path)
	// flock locks are per open file, so a second Open in this process
	// contends exactly like a second daemon.
	_, err := store.Open(path, store.Options{LockTimeout: 100 * time.Millisecond})
	require.ErrorIs(t, err, store.ErrLocked)
	require.Contains(t, err.Error(), path)
}

func validDB(t *testing.T, dir string) []byte {
	t.Helper()
	path := filepath.Join(dir, "valid.db")
	s, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	for i := range 200 {
		put(t, s, string(rune('a'+i%26))+string(rune(i)), string(bytes.Repeat([]byte{'x'}, 300)))
	}
	require.NoError(t, s.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestOpenCorruptIsRefusedAndFileKept(t *testing.T) {
	t.Parallel()
	valid := validDB(t, t.TempDir())
	page := os.Getpagesize()
	garbage := make([]byte, 8*page)
	_, _ = rand.Read(garbage)

	cases := []struct {
		name  string
		write func(t *testing.T, path string)
	}{
		{"random bytes", func(t *testing.T, path string) { require.NoError(t, os.WriteFile(path, garbage, 0o600)) }},
		{"truncated", func(t *testing.T, path string) { require.NoError(t, os.WriteFile(path, valid[:100], 0o600)) }},
		{"both meta pages zeroed", func(t *testing.T, path string) {
			b := bytes.Clone(valid)
			clear(b[:2*page])
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
		{"data pages overwritten", func(t *testing.T, path string) {
			b := bytes.Clone(valid)
			copy(b[2*page:], garbage[:6*page])
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "receiptd.db")
			tc.write(t, path)
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			_, err = store.Open(path, store.Options{LockTimeout: time.Second})
			require.ErrorIs(t, err, store.ErrCorrupt)
			require.Contains(t, err.Error(), path)

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.Equal(before, after), "a refused file must be left as it was")
		})
	}
}

func TestBackupIsAConsistentCopy(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	put(t, s, "receipt", "one")
	var buf bytes.Buffer
	n, err := s.Backup(&buf)
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), n)
	put(t, s, "receipt", "two") // later writes do not reach the copy

	dst := filepath.Join(t.TempDir(), "copy.db")
	require.NoError(t, os.WriteFile(dst, buf.Bytes(), 0o600))
	c := storetest.OpenPath(t, dst)
	require.Equal(t, "one", get(t, c, "receipt"))
}

func TestClosedStoreRefusesUpdates(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	err := s.Update(context.Background(), func(*bbolt.Tx) error { return nil })
	require.ErrorIs(t, err, store.ErrClosed)
	require.ErrorIs(t, s.View(func(*bbolt.Tx) error { return nil }), store.ErrClosed)
}
