//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
)

// TestRestoreGivesFilesToDataDirOwner: run as root (as an operator does
// with sudo), restore leaves the database and marker to the data
// directory's owner, the service user.
func TestRestoreGivesFilesToDataDirOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as another user")
	}
	src := layout.DB(dataDirWith(t, 1))
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(dir, 0o750))
	require.NoError(t, os.Chown(dir, nobody, nobody))
	cfg := writeFile(t, "c.toml", dataDirConfig(dir))
	code, _, stderr := runCLI(t, "restore", "-config", cfg, src)
	require.Equal(t, exitOK, code, stderr)
	for _, name := range []string{layout.DBFile, layout.MarkerFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.EqualValues(t, nobody, fi.Sys().(*syscall.Stat_t).Uid, name)
	}
}
