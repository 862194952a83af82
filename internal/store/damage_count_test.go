package store_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// A freelist that lists no page leaves every freed page neither in use nor
// free, each a problem of its own: Check keeps ten of those bbolt reports
// and counts all of them.
func TestCheckCountsEveryProblem(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "many.db")
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := range 3000 {
			if err := b.Put([]byte(fmt.Sprintf("key-%06d", i)), make([]byte, 100)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("b")) }))
	ps := int64(db.Info().PageSize)
	require.NoError(t, db.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// The newer meta page (0 or 1) names the freelist page (pgid at byte
	// 48 of the page, txid at 64); its element count is at byte 10.
	meta := func(i int64) []byte { return raw[i*ps : (i+1)*ps] }
	m := meta(0)
	if binary.LittleEndian.Uint64(meta(1)[64:]) > binary.LittleEndian.Uint64(m[64:]) {
		m = meta(1)
	}
	freelist := int64(binary.LittleEndian.Uint64(m[48:]))
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0, 0}, freelist*ps+10)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s, err := store.Open(path, store.Options{SkipCheckOnOpen: true})
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	err = s.Check()
	require.ErrorIs(t, err, store.ErrCorrupt)
	count := regexp.MustCompile(`\((\d+) problems found\)`).FindStringSubmatch(err.Error())
	require.NotNil(t, count, "%v", err)
	n, _ := strconv.Atoi(count[1])
	require.Greater(t, n, 10, "every problem counted, not only the ten kept: %v", err)
}
