package fileutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReplaceWaitsForAReader: on Windows a file another handle has open
// cannot be renamed over; Replace waits for the reader to close it (as
// `receiptd update status` reads update.json while the daemon writes
// it) instead of failing with "Access denied".
func TestReplaceWaitsForAReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "update.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	r, err := os.Open(path)
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		time.Sleep(300 * time.Millisecond)
		_ = r.Close()
	}()
	require.NoError(t, WriteFileAtomic(path, []byte("new"), 0o600))
	<-closed
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
}
