//go:build linux

package backup_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

// TestASnapshotNeverFillsTheDisk (issue 38): on a disk where the copy
// would leave less free than the guard keeps, the snapshot is skipped,
// nothing is written, and it is reported as a failed snapshot saying why;
// once there is room again, snapshots are written. With the default guard
// (256 MiB) a disk of 8 MiB never takes one.
func TestASnapshotNeverFillsTheDisk(t *testing.T) {
	vol := storetest.SmallVolume(t, 8<<20)
	dir := filepath.Join(vol, "snapshots")
	q := openQueue(t, 50)

	s := backup.New(backup.Config{Dir: dir, Every: time.Hour, Keep: 3}, q, zap.NewNop())
	_, err := s.Take(ctx)
	require.ErrorIs(t, err, backup.ErrNoSpace)
	require.ErrorContains(t, err, "256.0 MiB must stay free (the larger of 256.0 MiB and 10% of the disk)")
	requireOnly(t, vol, "snapshots")
	require.Empty(t, entries(t, dir), "nothing written")
	st := s.Status()
	require.Equal(t, uint64(1), st.Failures)
	require.Contains(t, st.LastError, "not enough free space")
	require.Nil(t, st.LastSuccess)

	// A guard of 1 MiB: 7 MiB of other files leave too little; without
	// them, room.
	s = backup.New(backup.Config{Dir: dir, Every: time.Hour, Keep: 3}, q, zap.NewNop())
	backup.SetSpaceGuard(s, 1<<20, 10)
	filler := filepath.Join(vol, "filler")
	require.NoError(t, os.WriteFile(filler, make([]byte, 7<<20), 0o600))
	_, err = s.Take(ctx)
	require.ErrorIs(t, err, backup.ErrNoSpace)
	require.Empty(t, entries(t, dir), "nothing written, no .tmp left")

	require.NoError(t, os.Remove(filler))
	r, err := s.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Base(r.Path)}, entries(t, dir))
	require.Empty(t, s.Status().LastError)
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func requireOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	require.ElementsMatch(t, names, entries(t, dir))
}
