//go:build unix

package datadir

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
)

// nobody is the unprivileged user and group the data directory is given to.
const nobody = 65534

// TestRestoreGivesFilesToDataDirOwner: run as root (as an operator does
// with sudo), restore leaves the database and marker to the data
// directory's owner, the service user.
func TestRestoreGivesFilesToDataDirOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as another user")
	}
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(dir, 0o750))
	require.NoError(t, os.Chown(dir, nobody, nobody))
	_, err := Restore(context.Background(), configFor(t, dir), backupOf(t, 1))
	require.NoError(t, err)
	for _, path := range []string{layout.DB(dir), layout.Marker(dir)} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.EqualValues(t, nobody, fi.Sys().(*syscall.Stat_t).Uid, path)
		require.EqualValues(t, nobody, fi.Sys().(*syscall.Stat_t).Gid, path)
	}
}
