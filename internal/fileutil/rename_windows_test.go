package fileutil

import (
	"os"
	"path/filepath"
	"syscall"
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

// TestReadFileWaitsForARename: a handle that shares nothing (as a
// rename's hold on the file it replaces shares no deletion) makes
// os.ReadFile fail with a sharing violation; ReadFile waits for it to be
// closed and reads the file.
func TestReadFileWaitsForARename(t *testing.T) {
	path := filepath.Join(t.TempDir(), "update.json")
	require.NoError(t, os.WriteFile(path, []byte("state"), 0o600))
	p, err := syscall.UTF16PtrFromString(path)
	require.NoError(t, err)
	h, err := syscall.CreateFile(p, syscall.GENERIC_READ|syscall.GENERIC_WRITE, 0, nil, syscall.OPEN_EXISTING, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	require.NoError(t, err)
	_, err = os.ReadFile(path)
	require.True(t, busy(err), "os.ReadFile beside a handle that shares nothing: %v", err)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		time.Sleep(300 * time.Millisecond)
		_ = syscall.CloseHandle(h)
	}()
	got, err := ReadFile(path)
	<-closed
	require.NoError(t, err)
	require.Equal(t, "state", string(got))
}
