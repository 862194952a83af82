package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// entriesRoot is the page number and page size of the root page of the
// queue's entries bucket in the stopped database db.
func entriesRoot(t *testing.T, db string) (root int64, pageSize int) {
	t.Helper()
	b, err := bbolt.Open(db, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.View(func(tx *bbolt.Tx) error {
		root = int64(tx.Bucket(store.BucketQueue).Bucket([]byte("entries")).Root())
		return nil
	}))
	require.NotZero(t, root, "the entries bucket has a page of its own")
	return root, b.Info().PageSize
}

// writeAt overwrites the bytes at off of file path.
func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestRunRefusesADamagedDatabaseInWords: a really damaged file (a page
// zeroed, a page header garbled, both meta pages zeroed) is refused with
// exit 1 in words: the file, its first damaged page, and `receiptd
// salvage` as the next step; never bbolt's panic text.
func TestRunRefusesADamagedDatabaseInWords(t *testing.T) {
	testkit.Parallel(t)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, db string) (want string)
	}{{
		name: "a zeroed page",
		damage: func(t *testing.T, db string) string {
			root, ps := entriesRoot(t, db)
			writeAt(t, db, root*int64(ps), make([]byte, ps))
			return fmt.Sprintf("the first damaged page is page %d: it does not hold what the database's tree expects there", root)
		},
	}, {
		name: "a garbled page header",
		damage: func(t *testing.T, db string) string {
			root, ps := entriesRoot(t, db)
			writeAt(t, db, root*int64(ps)+8, binary.LittleEndian.AppendUint16(nil, 0xffff))
			return fmt.Sprintf("the first damaged page is page %d: ", root)
		},
	}, {
		name: "both meta pages zeroed",
		damage: func(t *testing.T, db string) string {
			_, ps := entriesRoot(t, db)
			writeAt(t, db, 0, make([]byte, 2*ps))
			return "pages 0 and 1, which say where everything else is, are both damaged"
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.Parallel(t)
			dir := dataDirWith(t, 30)
			db := layout.DB(dir)
			want := tc.damage(t, db)
			code, refused := runRefused(t, dataDirConfig(dir))
			require.Equal(t, exitFailure, code, refused)
			t.Logf("the refusal:\n%s", refused)
			for _, s := range []string{db, want, "Next step: `receiptd salvage`"} {
				require.Contains(t, refused, s)
			}
			for _, s := range []string{"panic", "assertion", "goroutine"} {
				require.NotContains(t, refused, s)
			}
		})
	}
}
