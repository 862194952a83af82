package datadir

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestSalvageDir runs salvage in process on data directories made by the
// real queue (30 receipts, the last 10 only in the write-ahead log, as a
// kill -9 leaves them) and damaged in ways that leave nothing for bbolt
// to open.
func TestSalvageDir(t *testing.T) {
	for _, tc := range []struct {
		name      string
		damage    func(t *testing.T, db string)
		recovered int
		refused   string
	}{{
		// Neither meta page holds: every page is scanned; the log adds
		// what the file never held.
		name: "both meta pages zeroed",
		damage: func(t *testing.T, db string) {
			f, err := os.OpenFile(db, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(make([]byte, 8192), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		},
		recovered: 30,
	}, {
		// The log's one segment still holds the 20 applied receipts too: a
		// segment goes only once a newer one holds the log's end.
		name:      "database file gone, the log left",
		damage:    func(t *testing.T, db string) { require.NoError(t, os.Remove(db)) },
		recovered: 30,
	}, {
		name: "nothing readable, no log",
		damage: func(t *testing.T, db string) {
			require.NoError(t, os.WriteFile(db, bytes.Repeat([]byte{0xAB}, 64<<10), 0o600))
			require.NoError(t, os.RemoveAll(layout.WAL(filepath.Dir(db))))
		},
		refused: "nothing could be read",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := crashedDataDir(t, 20, 10)
			db := layout.DB(dir)
			tc.damage(t, db)
			before, _ := os.ReadFile(db)
			cfg := config.Default()
			cfg.DataDir, cfg.Listen = dir, testkit.ClosedAddr(t)
			r, err := Salvage(context.Background(), cfg)
			if tc.refused != "" {
				require.ErrorContains(t, err, tc.refused)
				after, _ := os.ReadFile(db)
				require.Equal(t, before, after, "nothing changed")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.recovered, r.Entries)
			require.Equal(t, tc.recovered, r.Counts[queue.StateHeld], "every receipt was queued: all held")
			st, err := store.OpenDir(dir, store.Options{})
			require.NoError(t, err, "the data directory opens as the daemon opens it")
			require.NoError(t, st.Close())
		})
	}
}

// crashedDataDir is a data directory holding applied receipts and more
// only in the write-ahead log, as a kill -9 leaves it: a copy taken while
// the queue was open.
func crashedDataDir(t *testing.T, applied, logged int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "data")
	st, err := store.OpenDir(src, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(context.Background(), st, queue.Options{LogDir: layout.WAL(src)})
	require.NoError(t, err)
	enq := func(i int) {
		body := sim.SampleReceipt("POS-1", fmt.Sprintf("%06d", i))
		_, _, err := q.Enqueue(context.Background(), queue.NewReceipt{IdemKey: fmt.Sprintf("k%d", i), Body: body,
			BodyHash: receipt.Fingerprint(body)})
		require.NoError(t, err)
	}
	for i := 1; i <= applied; i++ {
		enq(i)
	}
	require.NoError(t, q.ApplyAll(context.Background()))
	for i := applied + 1; i <= applied+logged; i++ {
		enq(i)
	}
	dst := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	require.NoError(t, q.Close(context.Background()))
	require.NoError(t, st.Close())
	return dst
}
