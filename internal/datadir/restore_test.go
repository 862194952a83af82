package datadir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store/storetest"
	"github.com/receiptd/receiptd/internal/wal"
)

// backupOf is a backup of a data directory holding n queued receipts: its
// database file, copied once receiptd stopped.
func backupOf(t *testing.T, n int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "backup.db")
	copyFile(t, layout.DB(dataDirWith(t, n)), src)
	return src
}

// TestRestoreHoldsWhatWasUnsent: a backup put back over a data directory,
// or into an empty one (a new till taking over), has its unsent entries
// held with the message that they may have been sent since, and an
// identity of its own that the directory's marker names; the database it
// replaces is kept under a dated name with its entries.
func TestRestoreHoldsWhatWasUnsent(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		kept int // entries of the database set aside; -1: none was there
	}{
		{"over a data directory", func(t *testing.T) string { return dataDirWith(t, 5) }, 5},
		{"into an empty data directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "new") }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := backupOf(t, 3)
			srcBefore, err := os.ReadFile(src)
			require.NoError(t, err)
			dir := tc.dir(t)
			r, err := Restore(context.Background(), configFor(t, dir), src)
			require.NoError(t, err)
			require.Equal(t, 3, r.Held)
			require.Empty(t, r.LogKeptAs, "a log applied to the database set aside is not kept")

			if tc.kept < 0 {
				require.Empty(t, r.KeptAs)
			} else {
				require.Equal(t, []string{r.KeptAs}, glob(t, layout.KeptGlob(layout.DB(dir), layout.BeforeRestore)))
				_, kq := openFile(t, r.KeptAs)
				c, err := kq.Counts()
				require.NoError(t, err)
				require.Equal(t, tc.kept, c[queue.StateQueued], "the database set aside is whole")
			}
			require.NoFileExists(t, filepath.Join(dir, layout.RestoreTemp))
			after, err := os.ReadFile(src)
			require.NoError(t, err)
			require.Equal(t, srcBefore, after, "the backup itself is not changed")

			st, q := openAsDaemon(t, dir)
			id, err := st.ID()
			require.NoError(t, err)
			require.NotEqual(t, fileID(t, src), id, "the restored copy is a database of its own")
			for i := 1; i <= 3; i++ {
				e, err := q.Get(queue.FormatID(uint64(i)))
				require.NoError(t, err)
				require.Equal(t, queue.StateHeld, e.State)
				require.Equal(t, restoredMessage, e.Outcome.Message)
			}
			var out bytes.Buffer
			r.WriteReport(&out, src, dir)
			require.Contains(t, out.String(), "restored "+src+" as "+layout.DB(dir))
			require.Contains(t, out.String(), "3 entries unsent in the backup are held")
		})
	}
}

// TestRestoreRefusesDamagedBackup: a backup that does not open as a
// consistent database, or an empty file (a copy that failed: bbolt would
// make it a new, empty database), or another program's bbolt file, leaves
// the data directory as it was.
func TestRestoreRefusesDamagedBackup(t *testing.T) {
	for name, content := range map[string][]byte{
		"not a database":  []byte("not a database at all, but long enough to have a meta page..............."),
		"empty":           nil,
		"another program": storetest.ForeignBolt(t),
	} {
		t.Run(name, func(t *testing.T) {
			dir := dataDirWith(t, 1)
			bad := filepath.Join(t.TempDir(), "bad.db")
			require.NoError(t, os.WriteFile(bad, content, 0o600))
			before := snapshot(t, dir)
			_, err := Restore(context.Background(), configFor(t, dir), bad)
			require.ErrorContains(t, err, "does not open")
			require.Equal(t, before, snapshot(t, dir), "the data directory is as it was")
		})
	}
}

// TestRestoreAfterAKillKeepsWhatOnlyTheLogHeld: receipts acknowledged
// moments before a kill -9 may be only in the write-ahead log. A restore
// then applies them to the database it sets aside (nothing acknowledged
// is lost), and the restored database starts a log of its own, so none of
// them is replayed into it under a queueId it already uses.
func TestRestoreAfterAKillKeepsWhatOnlyTheLogHeld(t *testing.T) {
	dir := crashedDataDir(t, 1, 5)
	n, err := wal.Count(layout.WAL(dir))
	require.NoError(t, err)
	require.NotZero(t, n, "the last receipts are only in the log")
	src := filepath.Join(t.TempDir(), "backup.db")
	copyFile(t, layout.DB(dir), src) // the file holds the first receipt only

	r, err := Restore(context.Background(), configFor(t, dir), src)
	require.NoError(t, err)
	require.Empty(t, r.LogKeptAs)
	require.NoError(t, r.LogErr)
	_, kq := openFile(t, r.KeptAs)
	c, err := kq.Counts()
	require.NoError(t, err)
	require.Equal(t, 6, c[queue.StateQueued], "the set-aside database holds every acknowledged receipt")

	_, q := openAsDaemon(t, dir)
	e, err := q.Get(queue.FormatID(1))
	require.NoError(t, err)
	require.Equal(t, queue.StateHeld, e.State)
	_, err = q.Get(queue.FormatID(3))
	require.ErrorIs(t, err, queue.ErrNotFound, "nothing of the old log is replayed into the restored database")
	e, replayed := enqueueOne(t, q, 7)
	require.False(t, replayed)
	require.Equal(t, queue.FormatID(2), e.QueueID, "the restored database's queueIds go on from its own")
}

// TestRestoreKeepsALogItCannotApply: when the database the log belongs to
// is damaged, the log cannot be applied to it; restore keeps the log
// beside it, under the same stamp, says why, and the restored database
// starts a log of its own.
func TestRestoreKeepsALogItCannotApply(t *testing.T) {
	dir := crashedDataDir(t, 1, 5)
	src := filepath.Join(t.TempDir(), "backup.db")
	copyFile(t, layout.DB(dir), src)
	zeroMetaPages(t, layout.DB(dir))

	r, err := Restore(context.Background(), configFor(t, dir), src)
	require.NoError(t, err)
	require.Error(t, r.LogErr)
	require.Equal(t, []string{r.LogKeptAs}, glob(t, layout.KeptGlob(layout.WAL(dir), layout.BeforeRestore)))
	require.Equal(t, layout.DB(dir)+strings.TrimPrefix(r.LogKeptAs, layout.WAL(dir)), r.KeptAs,
		"the database and its log are set aside together")
	n, err := wal.Count(r.LogKeptAs)
	require.NoError(t, err)
	require.NotZero(t, n, "the kept log still holds the receipts only it had")
	var out bytes.Buffer
	r.WriteReport(&out, src, dir)
	require.Contains(t, out.String(), "could not be applied")
	require.Contains(t, out.String(), r.LogKeptAs)

	_, q := openAsDaemon(t, dir)
	_, err = q.Get(queue.FormatID(3))
	require.ErrorIs(t, err, queue.ErrNotFound)
}

// snapshot is every file of dir, by name, with the SHA-256 of its
// content: what a refused command must leave as it was.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[path] = fmt.Sprintf("%x", sha256.Sum256(b))
		return err
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return files
}
