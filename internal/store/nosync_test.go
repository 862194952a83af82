//go:build !receiptd_nosync_unsafe

package store

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRealBuildsFsyncEveryCommit pins that only the unsafe build tag can
// turn off bbolt's commit fsync.
func TestRealBuildsFsyncEveryCommit(t *testing.T) {
	require.False(t, UnsafeNoSync)
	require.False(t, boltOptions(Options{}).NoSync)
	s, err := Open(filepath.Join(t.TempDir(), "r.db"), Options{})
	require.NoError(t, err)
	defer s.Close()
	require.False(t, s.db.NoSync)
}
