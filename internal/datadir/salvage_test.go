package datadir

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
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
		name:      "both meta pages zeroed",
		damage:    zeroMetaPages,
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
			r, err := Salvage(context.Background(), configFor(t, dir))
			if tc.refused != "" {
				require.ErrorContains(t, err, tc.refused)
				after, _ := os.ReadFile(db)
				require.Equal(t, before, after, "nothing changed")
				require.Empty(t, glob(t, layout.KeptGlob(db, layout.Damaged)))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.recovered, r.Entries)
			require.Equal(t, tc.recovered, r.Counts[queue.StateHeld], "every receipt was queued: all held")
			requireSetAside(t, dir, r, before)
			_, q := openAsDaemon(t, dir)
			for i := 1; i <= tc.recovered; i++ {
				e, err := q.Get(queue.FormatID(uint64(i)))
				require.NoError(t, err)
				require.Equal(t, queue.StateHeld, e.State)
				require.Equal(t, salvagedMessage, e.Outcome.Message)
			}
		})
	}
}

// requireSetAside: the damaged database (when there was one) and its log
// are kept under names of the same stamp, with the content they had, and
// the new database's build file is gone.
func requireSetAside(t *testing.T, dir string, r Salvaged, before []byte) {
	t.Helper()
	db, log := layout.DB(dir), layout.WAL(dir)
	require.Equal(t, []string{r.LogKeptAs}, glob(t, layout.KeptGlob(log, layout.Damaged)))
	require.NoDirExists(t, log, "the new database starts a log of its own")
	stamp := strings.TrimPrefix(r.LogKeptAs, log)
	if before == nil {
		require.Empty(t, r.KeptAs)
		require.True(t, r.DBMissing)
	} else {
		require.Equal(t, db+stamp, r.KeptAs, "the database and its log are set aside together")
		kept, err := os.ReadFile(r.KeptAs)
		require.NoError(t, err)
		require.Equal(t, before, kept, "the damaged file is kept as it was")
	}
	require.NoFileExists(t, filepath.Join(dir, layout.SalvageTemp))
}

// TestSalvageKeepsWhatIsFinished: a bad sector on the root page of the
// entries' tree after 20 receipts were sent and 10 queued. The sent ones
// keep their state, the queued ones come back held, a repeat of a
// recovered receipt under its key is a replay, and queueIds continue
// after the recovered ones.
func TestSalvageKeepsWhatIsFinished(t *testing.T) {
	dir := dataDirWith(t, 30)
	markSent(t, dir, 20)
	zeroEntriesRoot(t, layout.DB(dir))
	_, err := store.OpenDir(dir, store.Options{})
	require.Error(t, err, "the damage is one the daemon refuses")

	r, err := Salvage(context.Background(), configFor(t, dir))
	require.NoError(t, err)
	require.Equal(t, 30, r.Entries)
	require.Equal(t, 10, r.Held)
	require.Equal(t, map[queue.State]int{queue.StateSent: 20, queue.StateHeld: 10}, nonZero(r.Counts))
	require.Len(t, glob(t, layout.KeptGlob(layout.DB(dir), layout.Damaged)), 1, "the damaged file is kept")

	_, q := openAsDaemon(t, dir)
	for i := 1; i <= 30; i++ {
		e, err := q.Get(queue.FormatID(uint64(i)))
		require.NoError(t, err)
		if i <= 20 {
			require.Equal(t, queue.StateSent, e.State, i)
			continue
		}
		require.Equal(t, queue.StateHeld, e.State, i)
		require.Contains(t, e.Outcome.Message, "receiptd salvage")
		require.Contains(t, e.Outcome.Message, "Check with the tax service")
	}
	for _, i := range []int{7, 25} {
		e, replayed := enqueueOne(t, q, i)
		require.True(t, replayed, "a POS retry of receipt %d is a replay", i)
		require.Equal(t, queue.FormatID(uint64(i)), e.QueueID)
	}
	e, replayed := enqueueOne(t, q, 31)
	require.False(t, replayed)
	require.Equal(t, queue.FormatID(31), e.QueueID, "queueIds continue after the recovered ones")
}

// markSent records the first n entries of dir's stopped database as sent,
// as the worker does: claimed, then finished with the tax service's id.
func markSent(t *testing.T, dir string, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenDir(dir, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(ctx, st, queue.Options{LogDir: layout.WAL(dir)})
	require.NoError(t, err)
	claimed, err := q.Claim(ctx, n, time.Now())
	require.NoError(t, err)
	require.Len(t, claimed, n)
	for i, e := range claimed {
		_, err := q.Finish(ctx, queue.Finishing{QueueID: e.QueueID, Next: queue.StateSent,
			Attempt: queue.Attempt{At: time.Now(), Result: queue.ResultSuccess},
			Outcome: &queue.Outcome{Status: "SUCCESS", ID: fmt.Sprintf("%033d", i+1)}})
		require.NoError(t, err)
	}
	require.NoError(t, q.Close(ctx))
	require.NoError(t, st.Close())
}

// zeroEntriesRoot zeroes the root page of the queue's entries bucket in
// the stopped database db: a bad sector where the tree of every entry
// begins.
func zeroEntriesRoot(t *testing.T, db string) {
	t.Helper()
	b, err := bbolt.Open(db, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	var root int64
	require.NoError(t, b.View(func(tx *bbolt.Tx) error {
		root = int64(tx.Bucket(store.BucketQueue).Bucket([]byte("entries")).Root())
		return nil
	}))
	ps := b.Info().PageSize
	require.NoError(t, b.Close())
	require.NotZero(t, root, "the entries bucket has a page of its own")
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, ps), root*int64(ps))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// enqueueOne queues sample receipt i under key k<i> again, as a POS
// repeating it does, and says whether it was a replay.
func enqueueOne(t *testing.T, q *queue.Queue, i int) (queue.Entry, bool) {
	t.Helper()
	body := sim.SampleReceipt("POS-1", fmt.Sprintf("%06d", i))
	e, replayed, err := q.Enqueue(context.Background(), queue.NewReceipt{IdemKey: fmt.Sprintf("k%d", i), Body: body,
		BodyHash: receipt.Fingerprint(body)})
	require.NoError(t, err)
	return e, replayed
}

// nonZero is counts without the states no entry is in.
func nonZero(counts map[queue.State]int) map[queue.State]int {
	out := map[queue.State]int{}
	for s, n := range counts {
		if n > 0 {
			out[s] = n
		}
	}
	return out
}

// zeroMetaPages zeroes both meta pages of the stopped database db (4 KiB
// pages): neither says any more where the tree is.
func zeroMetaPages(t *testing.T, db string) {
	t.Helper()
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, 8192), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
