package datadir

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
)

// TestInit is `run -init`: a lost or empty database is made new and empty
// with its marker, and the lost one's write-ahead log, which would be
// refused beside it, is set aside; a database in place is left alone,
// log and all.
func TestInit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lose    func(t *testing.T, dir string)
		created bool
		aside   bool // the write-ahead log is set aside
	}{
		{"the database lost, its log left", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(layout.DB(dir)))
		}, true, true},
		{"the database empty", func(t *testing.T, dir string) {
			require.NoError(t, os.Truncate(layout.DB(dir), 0))
		}, true, true},
		{"the database and its log lost", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(layout.DB(dir)))
			require.NoError(t, os.RemoveAll(layout.WAL(dir)))
		}, true, false},
		{"the database in place", func(*testing.T, string) {}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := crashedDataDir(t, 2, 3)
			tc.lose(t, dir)
			var id string
			if !tc.created {
				id = fileID(t, layout.DB(dir))
			}
			logBefore := snapshot(t, layout.WAL(dir))
			require.NoError(t, Init(dir))
			aside := glob(t, layout.KeptGlob(layout.WAL(dir), layout.BeforeInit))
			if tc.aside {
				require.Len(t, aside, 1, "the lost database's write-ahead log is set aside")
				require.NoDirExists(t, layout.WAL(dir))
			} else {
				require.Empty(t, aside)
			}
			if !tc.created {
				require.Equal(t, id, fileID(t, layout.DB(dir)), "a database in place is left alone")
				require.Equal(t, logBefore, snapshot(t, layout.WAL(dir)), "and its log too")
			}
			require.FileExists(t, layout.Marker(dir))
			_, q := openAsDaemon(t, dir)
			c, err := q.Counts()
			require.NoError(t, err)
			want := 5 // the log replayed over the 2 applied
			if tc.created {
				want = 0
			}
			require.Equal(t, want, c[queue.StateQueued])
		})
	}
}
