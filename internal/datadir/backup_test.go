package datadir

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

// TestBackupWritesACheckedCopy: the copy fetched is written whole, checked
// and renamed over path, leaving no partial copy; a copy that fails midway
// or does not open as a receiptd database leaves path as it was, and no
// partial copy either.
func TestBackupWritesACheckedCopy(t *testing.T) {
	good, err := os.ReadFile(layout.DB(dataDirWith(t, 3)))
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		fetch   func() (io.ReadCloser, error)
		refused string
	}{
		{"a whole copy", body(good), ""},
		{"cut midway", func() (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(strings.NewReader(string(good[:len(good)/2])),
				failing{errors.New("connection reset")})), nil
		}, "download after"},
		{"refused by the daemon", func() (io.ReadCloser, error) { return nil, errors.New("401: bad token") }, "401"},
		{"empty", body(nil), "too short for a database"},
		{"another program's bbolt file", body(storetest.ForeignBolt(t)), "not a receiptd database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "backup.db")
			require.NoError(t, os.WriteFile(path, []byte("the previous backup"), 0o600))
			n, err := Backup(context.Background(), path, tc.fetch)
			require.NoFileExists(t, PartialName(path))
			got, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			if tc.refused != "" {
				require.ErrorContains(t, err, tc.refused)
				require.Equal(t, "the previous backup", string(got), "path is the old file")
				return
			}
			require.NoError(t, err)
			require.EqualValues(t, len(good), n)
			require.Equal(t, good, got)
			st, err := store.Open(path, store.Options{Existing: true})
			require.NoError(t, err)
			require.NoError(t, st.Close())
		})
	}
}

// TestRemovePartial: the partial copy a backup killed midway left is
// removed (it is never a backup), and its absence is no error.
func TestRemovePartial(t *testing.T) {
	path := filepath.Join(t.TempDir(), "backup.db")
	require.NoError(t, os.WriteFile(PartialName(path), []byte("half a copy"), 0o600))
	require.NoError(t, RemovePartial(path))
	require.NoFileExists(t, PartialName(path))
	require.NoError(t, RemovePartial(path), "nothing to remove")
}

// body is a fetch that answers with b.
func body(b []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(string(b))), nil }
}

// failing is a reader that fails with err: a connection lost mid-download.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }
