//go:build !receiptd_nosync_unsafe && !receiptd_nodirsync_unsafe

package store

import (
	"path/filepath"
	"testing"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/stretchr/testify/require"
)

// TestRealBuildsFsyncEveryCommit pins that only the unsafe build tags can
// turn off bbolt's commit fsync or the directory fsync.
func TestRealBuildsFsyncEveryCommit(t *testing.T) {
	t.Parallel()
	require.False(t, fileutil.UnsafeNoSync)
	require.False(t, fileutil.UnsafeNoDirSync)
	require.False(t, boltOptions(Options{}).NoSync)
	s, err := Open(filepath.Join(t.TempDir(), "r.db"), Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, s.db.NoSync)
}
