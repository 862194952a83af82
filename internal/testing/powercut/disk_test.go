package powercut

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func read(t *testing.T, d *Disk, n *Node) []byte {
	t.Helper()
	buf := make([]byte, d.Attr(n).Size+10)
	got, err := d.ReadAt(n, buf, 0)
	require.NoError(t, err)
	return buf[:got]
}

func TestDiskKeepsOnlySyncedData(t *testing.T) {
	t.Parallel()
	d := NewDisk()
	f, err := d.Create(d.Root(), "f", false, 0o600)
	require.NoError(t, err)
	require.NoError(t, d.Sync(d.Root()))
	first := bytes.Repeat([]byte("a"), PageSize+100) // spans two pages
	_, err = d.WriteAt(f, first, 0)
	require.NoError(t, err)
	require.NoError(t, d.Sync(f))

	_, err = d.WriteAt(f, []byte("BB"), PageSize-1) // across the page boundary
	require.NoError(t, err)
	_, err = d.WriteAt(f, []byte("tail"), 3*PageSize) // grows, leaving a hole
	require.NoError(t, err)
	now := read(t, d, f)
	require.Len(t, now, 3*PageSize+4)
	require.Equal(t, "BB", string(now[PageSize-1:PageSize+1]))
	require.Equal(t, make([]byte, 10), now[2*PageSize:2*PageSize+10], "a hole reads as zeros")

	lost := d.PowerOff()
	require.Equal(t, uint64(3), lost.UnsyncedPages)
	require.Equal(t, uint64(1), lost.UnsyncedSizes)
	_, err = d.ReadAt(f, make([]byte, 1), 0)
	require.ErrorIs(t, err, errOff, "nothing works until the power is back")
	d.PowerOn()
	require.Equal(t, first, read(t, d, f))
}

func TestDiskTruncationIsDroppedUnlessSynced(t *testing.T) {
	t.Parallel()
	d := NewDisk()
	f, err := d.Create(d.Root(), "f", false, 0o600)
	require.NoError(t, err)
	require.NoError(t, d.Sync(d.Root()))
	data := bytes.Repeat([]byte("x"), 3*PageSize)
	_, err = d.WriteAt(f, data, 0)
	require.NoError(t, err)
	require.NoError(t, d.Sync(f))

	require.NoError(t, d.Truncate(f, 10))
	require.NoError(t, d.Truncate(f, 2*PageSize)) // grows back: zeros past 10
	require.Equal(t, append(bytes.Repeat([]byte("x"), 10), make([]byte, 2*PageSize-10)...), read(t, d, f))
	d.PowerOff()
	d.PowerOn()
	require.Equal(t, data, read(t, d, f), "an unsynced truncation is undone")

	require.NoError(t, d.Truncate(f, 10))
	require.NoError(t, d.Sync(f))
	d.PowerOff()
	d.PowerOn()
	require.Equal(t, data[:10], read(t, d, f))
}

func TestDiskNamesNeedTheDirectorySynced(t *testing.T) {
	t.Parallel()
	d := NewDisk()
	dir, err := d.Create(d.Root(), "data", true, 0o700)
	require.NoError(t, err)
	require.NoError(t, d.Sync(d.Root()))
	f, err := d.Create(dir, "db", false, 0o600)
	require.NoError(t, err)
	_, err = d.WriteAt(f, []byte("hello"), 0)
	require.NoError(t, err)
	require.NoError(t, d.Sync(f)) // the data, not the name

	d.PowerOff()
	d.PowerOn()
	_, err = d.Lookup(dir, "db")
	require.ErrorIs(t, err, errNotExist, "a fsynced file whose directory was not fsynced is gone")

	f, err = d.Create(dir, "db.tmp", false, 0o600)
	require.NoError(t, err)
	_, err = d.WriteAt(f, []byte("v1"), 0)
	require.NoError(t, err)
	require.NoError(t, d.Sync(f))
	require.NoError(t, d.Sync(dir))
	require.NoError(t, d.Rename(dir, "db.tmp", dir, "db", false))
	d.PowerOff()
	d.PowerOn()
	_, err = d.Lookup(dir, "db")
	require.ErrorIs(t, err, errNotExist, "an unsynced rename is undone")
	got, err := d.Lookup(dir, "db.tmp")
	require.NoError(t, err)
	require.Equal(t, []byte("v1"), read(t, d, got))

	require.NoError(t, d.Remove(dir, "db.tmp", false))
	require.NoError(t, d.Sync(dir))
	d.PowerOff()
	d.PowerOn()
	list, err := d.List(dir)
	require.NoError(t, err)
	require.Empty(t, list, "a synced removal stays")
	require.Equal(t, uint64(3), d.Stats().Cuts)
}

func TestDiskRenameRules(t *testing.T) {
	t.Parallel()
	d := NewDisk()
	a, err := d.Create(d.Root(), "a", true, 0o700)
	require.NoError(t, err)
	_, err = d.Create(a, "b", true, 0o700)
	require.NoError(t, err)
	_, err = d.Create(d.Root(), "f", false, 0o600)
	require.NoError(t, err)
	b, err := d.Lookup(a, "b")
	require.NoError(t, err)
	require.ErrorIs(t, d.Rename(d.Root(), "a", b, "x", false), errInval, "a directory into itself")
	require.ErrorIs(t, d.Rename(d.Root(), "f", d.Root(), "a", false), errIsDir)
	require.ErrorIs(t, d.Rename(d.Root(), "a", d.Root(), "f", false), errNotDir)
	_, err = d.Create(d.Root(), "g", false, 0o600)
	require.NoError(t, err)
	require.ErrorIs(t, d.Rename(d.Root(), "f", d.Root(), "g", true), errExist)
	require.NoError(t, d.Rename(d.Root(), "f", d.Root(), "g", false))
	require.ErrorIs(t, d.Remove(d.Root(), "a", true), errNotEmpty)
}

func TestDiskPowerOffAtWrite(t *testing.T) {
	t.Parallel()
	d := NewDisk()
	f, err := d.Create(d.Root(), "f", false, 0o600)
	require.NoError(t, err)
	require.NoError(t, d.Sync(d.Root()))
	_, err = d.WriteAt(f, []byte("synced"), 0)
	require.NoError(t, err)
	require.NoError(t, d.Sync(f))

	cut := d.PowerOffAtWrite(2)
	_, err = d.WriteAt(f, []byte("SY"), 0)
	require.NoError(t, err, "the first write goes through")
	_, err = d.WriteAt(f, []byte("x"), 100)
	require.ErrorIs(t, err, errOff, "the power fails during the second")
	<-cut
	require.Equal(t, Stats{Cuts: 1, UnsyncedPages: 1}, d.PowerOff(), "a second PowerOff reports the cut that happened")
	require.Equal(t, uint64(1), d.Stats().Cuts)
	d.PowerOn()
	require.Equal(t, []byte("synced"), read(t, d, f))
}

// TestDiskPartialCutKeepsWholeSectorsOfOldOrNew: with KeepAtNextCut every
// unsynced sector ends up either as it was at the last fsync or as last
// written, never anything else, and both happen. Past the old end of the
// file "as it was" is zeros: a kept size with a dropped sector.
func TestDiskPartialCutKeepsWholeSectorsOfOldOrNew(t *testing.T) {
	t.Parallel()
	d := NewDisk()
	f, err := d.Create(d.Root(), "f", false, 0o600)
	require.NoError(t, err)
	require.NoError(t, d.Sync(d.Root()))
	old := bytes.Repeat([]byte("o"), 8*PageSize)
	_, err = d.WriteAt(f, old, 0)
	require.NoError(t, err)
	require.NoError(t, d.Sync(f))
	_, err = d.WriteAt(f, bytes.Repeat([]byte("n"), 10*PageSize), 0) // also grows
	require.NoError(t, err)
	_, err = d.Create(d.Root(), "g", false, 0o600)
	require.NoError(t, err)

	d.KeepAtNextCut(rand.New(rand.NewPCG(1, 2)))
	d.PowerOff()
	d.PowerOn()
	got := read(t, d, f)
	require.Contains(t, []int{8 * PageSize, 10 * PageSize}, len(got), "the size is the old or the new one")
	kept := map[byte]int{}
	for s := 0; s < len(got); s += sector {
		b := got[s : s+sector]
		require.True(t, bytes.Equal(b, bytes.Repeat(b[:1], sector)), "sector %d is torn inside", s/sector)
		require.Contains(t, []byte("on\x00"), b[0], "sector %d holds neither old nor new data", s/sector)
		if b[0] == 0 {
			require.GreaterOrEqual(t, s, len(old), "zeros only past the old end")
		}
		kept[b[0]]++
	}
	require.Positive(t, kept['o'], "some sectors dropped")
	require.Positive(t, kept['n'], "some sectors kept")

	_, err = d.WriteAt(f, bytes.Repeat([]byte("x"), 10*PageSize), 0)
	require.NoError(t, err)
	d.PowerOff() // the keeping applied to one cut only
	d.PowerOn()
	require.Equal(t, got, read(t, d, f))
}
