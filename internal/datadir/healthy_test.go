package datadir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
)

// TestCheckClean: nil only for a database that opens and passes the
// page-by-page check (salvage would only set a good file aside); a
// missing or damaged one is an error naming the file.
func TestCheckClean(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, db string)
		clean  bool
	}{
		{"clean", func(*testing.T, string) {}, true},
		{"missing", func(t *testing.T, db string) { require.NoError(t, os.Remove(db)) }, false},
		{"meta pages zeroed", zeroMetaPages, false},
		{"the entries' root page zeroed", zeroEntriesRoot, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataDirWith(t, 30)
			db := layout.DB(dir)
			tc.damage(t, db)
			before := snapshot(t, dir)
			err := CheckClean(dir)
			if tc.clean {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, "check "+db)
			}
			require.Equal(t, before, snapshot(t, dir), "the check changes nothing")
		})
	}
	require.Error(t, CheckClean(filepath.Join(t.TempDir(), "none")), "no data directory at all")
}
