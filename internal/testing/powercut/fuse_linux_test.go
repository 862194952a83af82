//go:build linux

package powercut

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// rig is a Disk mounted at a temporary folder, remounted by cut.
type rig struct {
	t    *testing.T
	disk *Disk
	m    *Mounted
}

func newRig(t *testing.T) *rig {
	Need(t)
	r := &rig{t: t, disk: NewDisk()}
	r.mount()
	t.Cleanup(func() {
		if r.m != nil {
			_ = r.m.Unmount()
		}
	})
	return r
}

func (r *rig) mount() {
	m, err := Mount(r.disk, r.t.TempDir())
	require.NoError(r.t, err)
	r.m = m
}

func (r *rig) path(name string) string { return filepath.Join(r.m.Dir, name) }

// cut drops what is unsynced, unmounts (taking the kernel's cache with it)
// and mounts the survivors at a new folder.
func (r *rig) cut() {
	r.disk.PowerOff()
	require.NoError(r.t, r.m.Unmount())
	r.m = nil
	r.disk.PowerOn()
	r.mount()
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// TestMmapSeesUnsyncedWritesAndTheCutDropsThem is bbolt's pattern: pwrite
// through the descriptor, read through a read-only shared mapping, and
// fdatasync to commit.
//
// The garbage collector is off meanwhile: a page fault on the mapping is
// served by this same process's FUSE server, and a stop-the-world could
// wait for the faulting thread while stopping the server's.
func TestMmapSeesUnsyncedWritesAndTheCutDropsThem(t *testing.T) {
	r := newRig(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	f, err := os.OpenFile(r.path("db"), os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	syncDir(t, r.m.Dir)
	durable := bytes.Repeat([]byte("d"), 2*PageSize)
	_, err = f.WriteAt(durable, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.Fdatasync(int(f.Fd())), "fdatasync counts as a sync")

	mm, err := syscall.Mmap(int(f.Fd()), 0, 2*PageSize, syscall.PROT_READ, syscall.MAP_SHARED)
	require.NoError(t, err)
	require.Equal(t, durable, mm)
	_, err = f.WriteAt([]byte("volatile"), PageSize+10)
	require.NoError(t, err)
	require.Equal(t, "volatile", string(mm[PageSize+10:PageSize+18]), "the mapping sees an unsynced write")
	buf := make([]byte, 8)
	_, err = f.ReadAt(buf, PageSize+10)
	require.NoError(t, err)
	require.Equal(t, "volatile", string(buf), "so does read")
	require.NoError(t, syscall.Munmap(mm))
	require.NoError(t, f.Close())

	r.cut()
	got, err := os.ReadFile(r.path("db"))
	require.NoError(t, err)
	require.Equal(t, durable, got, "the unsynced write is gone after the cut")
	require.Equal(t, uint64(1), r.disk.Stats().Cuts)
}

func TestNewFileNeedsItsDirectorySynced(t *testing.T) {
	r := newRig(t)
	require.NoError(t, os.Mkdir(r.path("data"), 0o700))
	syncDir(t, r.m.Dir)
	f, err := os.Create(r.path("data/receiptd.db"))
	require.NoError(t, err)
	_, err = f.WriteString("pages")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	r.cut()
	_, err = os.Stat(r.path("data/receiptd.db"))
	require.ErrorIs(t, err, os.ErrNotExist, "without a directory fsync the new name is lost")

	require.NoError(t, os.WriteFile(r.path("data/receiptd.db"), []byte("pages"), 0o600))
	f, err = os.OpenFile(r.path("data/receiptd.db"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	syncDir(t, r.path("data"))
	r.cut()
	got, err := os.ReadFile(r.path("data/receiptd.db"))
	require.NoError(t, err)
	require.Equal(t, "pages", string(got))
}

func TestUnsyncedRenameUnlinkAndTruncateAreUndone(t *testing.T) {
	r := newRig(t)
	for _, name := range []string{"a", "b"} {
		require.NoError(t, os.WriteFile(r.path(name), []byte("content of "+name), 0o600))
		f, err := os.OpenFile(r.path(name), os.O_RDWR, 0)
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
	}
	syncDir(t, r.m.Dir)
	require.NoError(t, os.Rename(r.path("a"), r.path("c")))
	require.NoError(t, os.Remove(r.path("b")))
	require.NoError(t, os.WriteFile(r.path("new"), nil, 0o600))
	require.NoError(t, os.Mkdir(r.path("newdir"), 0o700))
	require.NoError(t, os.Truncate(r.path("c"), 3))

	r.cut()
	entries, err := os.ReadDir(r.m.Dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"a", "b"}, names)
	got, err := os.ReadFile(r.path("a"))
	require.NoError(t, err)
	require.Equal(t, "content of a", string(got), "the truncation through the new name is undone")
}

func TestOperationsFailOnceThePowerIsOff(t *testing.T) {
	r := newRig(t)
	f, err := os.Create(r.path("f"))
	require.NoError(t, err)
	r.disk.PowerOff()
	_, err = f.WriteAt([]byte("x"), 0)
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorIs(t, f.Sync(), syscall.EIO)
	require.NoError(t, f.Close())
	require.NoError(t, r.m.Unmount())
	r.m = nil
}

// TestDsyncWritesAreDurableWhenTheyReturn: the kernel follows a write to
// an O_DSYNC descriptor with an fsync, so a write-ahead log opened that way
// is modelled as durable per write.
func TestDsyncWritesAreDurableWhenTheyReturn(t *testing.T) {
	r := newRig(t)
	f, err := os.OpenFile(r.path("wal"), os.O_RDWR|os.O_CREATE|syscall.O_DSYNC, 0o600)
	require.NoError(t, err)
	syncDir(t, r.m.Dir)
	syncs := r.disk.Stats().FileSyncs
	_, err = f.Write([]byte("record 1;"))
	require.NoError(t, err)
	require.Greater(t, r.disk.Stats().FileSyncs, syncs, "the write was followed by an fsync")
	require.NoError(t, f.Close())
	r.cut()
	got, err := os.ReadFile(r.path("wal"))
	require.NoError(t, err)
	require.Equal(t, "record 1;", string(got))
}
