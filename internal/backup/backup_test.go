package backup_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

var ctx = context.Background()

// openQueue is a queue with a write-ahead log, as the daemon opens it,
// holding n queued receipts.
func openQueue(t *testing.T, n int) *queue.Queue {
	t.Helper()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	st := storetest.OpenPath(t, path)
	q, err := queue.Open(ctx, st, queue.Options{LogDir: path + ".wal"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, q.Close(ctx)) })
	for i := range n {
		_, _, err := q.Enqueue(ctx, queue.NewReceipt{
			IdemKey: fmt.Sprintf("key-%d", i), BodyHash: fmt.Sprintf("hash-%d", i),
			Body: []byte(fmt.Sprintf(`{"billIdSuffix":"%d"}`, i)), MerchantTin: "123", PosNo: "1",
			BillIDSuffix: fmt.Sprint(i), Now: time.Now(),
		})
		require.NoError(t, err)
	}
	return q
}

// newScheduler is backup.New keeping no free space beyond the copy's own:
// what these tests check must not depend on how full the host's disk is
// (the guard, the larger of 256 MiB and 10% of the disk, failed them on
// a disk over 90% full). The guard has its own tests on a volume of its
// own (space_linux_test.go).
func newScheduler(cfg backup.Config, src backup.Source, log *zap.Logger) *backup.Scheduler {
	s := backup.New(cfg, src, log)
	backup.SetSpaceGuard(s, 0, 0)
	return s
}

func TestTakeWritesACheckedSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "usb", "receiptd") // created if missing
	s := newScheduler(backup.Config{Dir: dir, Every: time.Hour, Keep: 3}, openQueue(t, 25), zap.NewNop())
	r, err := s.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, 25, r.Entries)
	require.Regexp(t, `receiptd-[0-9]{8}T[0-9]{6}Z\.db$`, r.Path)
	fi, err := os.Stat(r.Path)
	require.NoError(t, err)
	require.Equal(t, r.Bytes, fi.Size())
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	require.Equal(t, []string{r.Path}, names, "no .tmp left behind")

	st, err := store.OpenReadOnly(r.Path)
	require.NoError(t, err)
	require.NoError(t, queue.CheckCopy(st, 25))
	require.NoError(t, st.Close())

	got := s.Status()
	require.Equal(t, dir, got.Dir)
	require.NotNil(t, got.LastSuccess)
	require.Empty(t, got.LastError)
	require.Equal(t, uint64(1), got.Snapshots)
	require.Equal(t, r.Path, got.LastFile)
}

// TestPruneKeepsTheNewestAndNothingElseIsTouched: only names of the
// snapshot pattern (and their .tmp leftovers) are removed. The new
// snapshot is taken on 2026-01-05, after the others: on the wall clock,
// any day before 2026-01-03 named it the oldest and pruned it.
func TestPruneKeepsTheNewestAndNothingElseIsTouched(t *testing.T) {
	dir := t.TempDir()
	old := []string{"receiptd-20260101T000000Z.db", "receiptd-20260102T000000Z.db", "receiptd-20260103T000000Z.db"}
	others := []string{"receiptd.db", "notes.txt", "receiptd-latest.db", "receiptd-20260101T000000Z.db.bak"}
	for _, n := range append(append([]string{}, old...), others...) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "receiptd-20260104T000000Z.db.tmp"), []byte("x"), 0o600))
	s := newScheduler(backup.Config{Dir: dir, Every: time.Hour, Keep: 2}, openQueue(t, 3), zap.NewNop())
	backup.SetNow(s, func() time.Time { return time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) })
	r, err := s.Take(ctx)
	require.NoError(t, err)
	require.Equal(t, "receiptd-20260105T000000Z.db", filepath.Base(r.Path))

	var left []string
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, de := range des {
		left = append(left, de.Name())
	}
	want := append([]string{filepath.Base(r.Path), old[2]}, others...)
	require.ElementsMatch(t, want, left)
}

func TestASnapshotIntoAFileIsReported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "usb")
	require.NoError(t, os.WriteFile(dir, []byte("a file where the directory should be"), 0o600))
	s := newScheduler(backup.Config{Dir: dir, Every: time.Hour, Keep: 2}, openQueue(t, 1), zap.NewNop())
	_, err := s.Take(ctx)
	require.Error(t, err)
	require.ErrorContains(t, err, dir)
	got := s.Status()
	require.Nil(t, got.LastSuccess)
	require.Contains(t, got.LastError, dir)
	require.Equal(t, uint64(1), got.Failures)
}

// lying copies the database but claims one entry more than it holds, as a
// copy that lost an entry would look.
type lying struct{ q *queue.Queue }

func (l lying) WriteCopy(ctx context.Context, w io.Writer) (queue.Copy, error) {
	c, err := l.q.WriteCopy(ctx, w)
	c.Entries++
	return c, err
}

func (l lying) CopySize() (int64, error) { return l.q.CopySize() }

func TestASnapshotThatFailsItsCheckIsDeleted(t *testing.T) {
	dir := t.TempDir()
	s := newScheduler(backup.Config{Dir: dir, Every: time.Hour, Keep: 2}, lying{openQueue(t, 4)}, zap.NewNop())
	_, err := s.Take(ctx)
	require.ErrorIs(t, err, store.ErrCorrupt)
	require.ErrorContains(t, err, "holds 4 entries, its counters say 4, and 5 were copied")
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, des, "the failed snapshot is deleted")
	require.Contains(t, s.Status().LastError, "5 were copied")
}

// TestASnapshotThatFailsItsCheckNeverHasItsName: the copy is checked under
// its temporary name and renamed only once it passed, so a copy that fails
// never appears under the snapshot's name. A file already under that name
// (a snapshot of the same second put back by hand) stays as it was, where
// renaming before checking replaced it and then deleted the failed copy.
func TestASnapshotThatFailsItsCheckNeverHasItsName(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	final := filepath.Join(dir, backup.Name(at))
	const there = "the snapshot already under this name"
	require.NoError(t, os.WriteFile(final, []byte(there), 0o600))
	s := newScheduler(backup.Config{Dir: dir, Every: time.Hour, Keep: 2}, lying{openQueue(t, 3)}, zap.NewNop())
	backup.SetNow(s, func() time.Time { return at })

	_, err := s.Take(ctx)
	require.ErrorIs(t, err, store.ErrCorrupt)
	require.ErrorContains(t, err, "holds 3 entries, its counters say 3, and 4 were copied")
	got, err := os.ReadFile(final)
	require.NoError(t, err, "the failed copy took the name and was deleted with it")
	require.Equal(t, there, string(got), "the failed copy was renamed over the file under its name")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, left, 1, "the failed copy is removed")
}

// TestLoopTakesSnapshotsAndStops: with a short interval the loop writes
// snapshots, prunes them to keep, and ends with its context.
func TestLoopTakesSnapshotsAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds")
	}
	dir := t.TempDir()
	s := newScheduler(backup.Config{Dir: dir, Every: time.Second, Keep: 2}, openQueue(t, 2), zap.NewNop())
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Loop(lctx) }()
	require.Eventually(t, func() bool { return s.Status().Snapshots >= 3 }, 20*time.Second, 50*time.Millisecond)
	cancel()
	<-done
	names, err := filepath.Glob(filepath.Join(dir, "receiptd-*.db"))
	require.NoError(t, err)
	require.Len(t, names, 2, "pruned to keep")
	if runtime.GOOS != "windows" {
		tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
		require.Empty(t, tmps)
	}
}

func TestLoopIsOffWithoutDir(t *testing.T) {
	s := newScheduler(backup.Config{Every: time.Millisecond, Keep: 1}, openQueue(t, 0), zap.NewNop())
	done := make(chan struct{})
	go func() { defer close(done); s.Loop(ctx) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Loop without a dir must return at once")
	}
	_, err := s.Take(ctx)
	require.ErrorContains(t, err, "backup.dir is not set")
}

func TestCheckDirSaysWhetherTheFolderCanHoldSnapshots(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	file := filepath.Join(base, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	tests := []struct {
		name, dir, wantErr string
	}{
		{"off", "", ""},
		{"missing, created", filepath.Join(base, "new", "snapshots"), ""},
		{"under a file", filepath.Join(file, "snapshots"), "backup.dir: " + filepath.Join(file, "snapshots") + " cannot hold snapshots"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(backup.Config{Dir: tc.dir, Every: time.Hour, Keep: 1}, openQueue(t, 0), zap.NewNop())
			err := s.CheckDir()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.dir != "" {
				names, err := os.ReadDir(tc.dir)
				require.NoError(t, err)
				require.Empty(t, names, "the check leaves nothing behind")
			}
		})
	}
}

// TestCheckDirTellsNothingOfWhatIsThere (issue 38): CheckDir's error
// reaches a head office in a FAILED status, so a folder under a file and
// one under a path that is not there read alike; the cause is in the log.
func TestCheckDirTellsNothingOfWhatIsThere(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	file := filepath.Join(base, "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	says := func(dir string) string {
		s := newScheduler(backup.Config{Dir: dir, Every: time.Hour, Keep: 1}, openQueue(t, 0), zap.NewNop())
		err := s.CheckDir()
		require.Error(t, err)
		return strings.ReplaceAll(err.Error(), dir, "DIR")
	}
	underFile := says(filepath.Join(file, "snapshots"))
	require.Equal(t, underFile, says(filepath.Join(file, "deeper", "snapshots")))
	require.NotContains(t, underFile, "not a directory")
	if runtime.GOOS == "linux" {
		// /proc takes no new folder, whoever asks.
		require.Equal(t, underFile, says("/proc/receiptd-no-such/snapshots"))
	}
}
