package salvage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

// An outcome only in the write-ahead log (the database holds the entry in
// sending, or not at all) is what salvage recovers: the entry as sent,
// never in sending, which would be sent again as interrupted. An outcome
// already applied, whose entry went on since, does not take it back.
func TestAddLogTakesTheOutcome(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := layout.DB(dir)
	st, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(ctx, st, queue.Options{LogDir: layout.WAL(dir)})
	require.NoError(t, err)
	now := time.Now().UTC()
	enqueue := func(n int) queue.Entry {
		b := body(n)
		e, _, err := q.Enqueue(ctx, queue.NewReceipt{IdemKey: string(rune('a' + n)), Body: b, BodyHash: receipt.Fingerprint(b), Sending: true})
		require.NoError(t, err)
		return e
	}
	finish := func(e queue.Entry, next queue.State, id string) {
		_, _, err := q.FinishAndClaim(ctx, queue.Finishing{QueueID: e.QueueID, Next: next, Awaited: true, Outcome: &queue.Outcome{Status: "SUCCESS", ID: id},
			Attempt: queue.Attempt{At: now, Result: queue.ResultSuccess}, NextAttemptAt: now.Add(time.Hour)}, 0, now)
		require.NoError(t, err)
	}
	again := enqueue(1)
	finish(again, queue.StateQueued, "") // applied below, then claimed again: its outcome record is old
	require.NoError(t, q.ApplyAll(ctx))
	_, err = q.Claim(ctx, 1, now.Add(2*time.Hour))
	require.NoError(t, err)
	inFile := enqueue(2)
	require.NoError(t, q.ApplyAll(ctx)) // in the file in sending
	finish(inFile, queue.StateSent, "U2")
	inLog := enqueue(3)
	finish(inLog, queue.StateSent, "U3")
	// A copy as a kill leaves it: the two outcomes in the log only.
	crash := t.TempDir()
	copyFile(t, path, layout.DB(crash))
	require.NoError(t, os.MkdirAll(layout.WAL(crash), 0o700))
	segFiles, err := filepath.Glob(filepath.Join(layout.WAL(dir), "*.wal"))
	require.NoError(t, err)
	for _, s := range segFiles {
		copyFile(t, s, filepath.Join(layout.WAL(crash), filepath.Base(s)))
	}
	require.NoError(t, q.Close(ctx))
	require.NoError(t, st.Close())

	db, got := salvageFile(t, layout.DB(crash))
	require.Equal(t, queue.StateSending, got[inFile.QueueID].State, "the database's copy")
	segs, err := wal.Scan(layout.WAL(crash))
	require.NoError(t, err)
	db.AddLog(segs)
	got = map[string]queue.Entry{}
	for _, e := range db.Entries() {
		got[e.QueueID] = e
	}
	for id, want := range map[string]string{inFile.QueueID: "U2", inLog.QueueID: "U3"} {
		require.Equal(t, queue.StateSent, got[id].State, id)
		require.Equal(t, want, got[id].Outcome.ID, id)
	}
	require.Equal(t, queue.StateSending, got[again.QueueID].State, "an applied outcome does not take back a later claim")
}
