package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"
)

// TestViewOfADamagedPageFailsTheStore: a read that meets a damaged page
// (bbolt panics on one) is ErrCorrupt naming the file, not a crash, and
// the Store refuses writes from then on, as after a failed commit.
func TestViewOfADamagedPageFailsTheStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.db")
	s, err := Open(path, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Update(context.Background(), func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("data"))
		if err != nil {
			return err
		}
		for i := range 200 {
			if err := b.Put(fmt.Appendf(nil, "k%04d", i), make([]byte, 100)); err != nil {
				return err
			}
		}
		return nil
	}))
	var root int64
	require.NoError(t, s.View(func(tx *bbolt.Tx) error {
		root = int64(tx.Bucket([]byte("data")).Root())
		return nil
	}))
	require.NoError(t, s.Close())
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, 4096), root*4096)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s, err = Open(path, Options{SkipCheckOnOpen: true})
	require.NoError(t, err)
	defer s.Close()
	err = s.View(func(tx *bbolt.Tx) error {
		_ = tx.Bucket([]byte("data")).Get([]byte("k0100"))
		return nil
	})
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, path)
	require.ErrorIs(t, s.Writable(), ErrFailed, "a damaged database takes no more writes")
}
