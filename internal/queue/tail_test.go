package queue_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
)

// tailLen is the length of the file's unindexed tail once every record
// of the write-ahead log is applied to the file.
func tailLen(t *testing.T, q *queue.Queue, st *store.Store) int {
	t.Helper()
	require.NoError(t, q.ApplyAll(ctx))
	n, err := queue.TailLen(st)
	require.NoError(t, err)
	return n
}

func ids(es []queue.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.QueueID)
	}
	return out
}

// Queued receipts 1–3 have index rows (a delete request indexed them), 5
// and 6 are in the unindexed tail; every reader must see one FIFO queue.
func TestReadersSeeIndexedAndTailAsOneQueue(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	for i := 1; i <= 3; i++ {
		enqueue(t, q, i)
	}
	require.Equal(t, 3, tailLen(t, q, st))
	d, action, err := q.RequestDelete(ctx, "UNKNOWN-1", "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action)
	require.Equal(t, "Q000000000004", d.QueueID)
	require.Zero(t, tailLen(t, q, st), "a delete request indexes the tail before inserting")
	enqueue(t, q, 5)
	enqueue(t, q, 6)
	require.Equal(t, 2, tailLen(t, q, st))
	require.NoError(t, queue.CheckIndexes(st))

	c := counts(t, q)
	require.Equal(t, 5, c[queue.StateQueued])
	require.Equal(t, 1, c[queue.StateDeleteQueued])

	var got []string
	after := ""
	for {
		page, next, err := q.List(queue.ListOptions{State: queue.StateQueued, Limit: 2, After: after})
		require.NoError(t, err)
		got = append(got, ids(page)...)
		if next == "" {
			break
		}
		after = next
	}
	require.Equal(t, []string{"Q000000000001", "Q000000000002", "Q000000000003", "Q000000000005", "Q000000000006"}, got)
	page, _, err := q.List(queue.ListOptions{State: queue.StateQueued, After: "Q000000000005"})
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000006"}, ids(page), "a cursor inside the tail")

	latest, err := q.Latest(queue.StateQueued, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000006", "Q000000000005", "Q000000000003"}, ids(latest))
	for _, n := range []int{0, -1} {
		latest, err = q.Latest(queue.StateQueued, n)
		require.NoError(t, err)
		require.Empty(t, latest, "Latest(queued, %d)", n)
	}

	oldest, ok, err := q.OldestUnsent()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Second), oldest)

	claimed, err := q.Claim(ctx, 10, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000001", "Q000000000002", "Q000000000003", "Q000000000004", "Q000000000005", "Q000000000006"},
		ids(claimed), "indexed and tail entries, and the delete between them, in FIFO order")
	require.Zero(t, tailLen(t, q, st))
	c = counts(t, q)
	require.Equal(t, 6, c[queue.StateSending])
	require.Zero(t, c[queue.StateQueued])
}

func TestOldestUnsentWhenOnlyTheTailIsUnsent(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	enqueue(t, q, 7)
	require.Equal(t, 1, tailLen(t, q, st))
	oldest, ok, err := q.OldestUnsent()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t0.Add(7*time.Second), oldest)
}

func TestDeleteCancelsAReceiptStillInTheTail(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	a := enqueue(t, q, 1)
	enqueue(t, q, 2)
	e, action, err := q.RequestDelete(ctx, a.QueueID, "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteCancelled, action)
	require.Equal(t, queue.StateCancelled, e.State)
	require.Zero(t, tailLen(t, q, st))
	c := counts(t, q)
	require.Equal(t, 1, c[queue.StateCancelled])
	require.Equal(t, 1, c[queue.StateQueued])
	claimOne(t, q, "Q000000000002")
}

// The tail survives a restart: a clean close is no reason to index it.
func TestTailSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openQueue(t, path)
	enqueue(t, q, 1)
	enqueue(t, q, 2)
	require.NoError(t, queue.CheckIndexes(st))
	crash(t, q, st)

	q, st = openQueue(t, path)
	require.Equal(t, 2, tailLen(t, q, st))
	require.Equal(t, 2, counts(t, q)[queue.StateQueued])
	claimOne(t, q, "Q000000000001")
	require.Zero(t, tailLen(t, q, st))
}

// A file of schema 1 had no tail: every entry had its index rows and the
// queue bucket had no index mark. Opening it must keep every entry
// claimable exactly once, in order, and upgrade the schema.
func TestOpenSchema1File(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openQueue(t, path)
	for i := 1; i <= 3; i++ {
		enqueue(t, q, i)
	}
	claimOne(t, q, "Q000000000001") // indexes 2 and 3 as schema 1 would have
	require.NoError(t, st.Update(ctx, func(tx *bbolt.Tx) error {
		if err := tx.Bucket(store.BucketQueue).Delete([]byte("indexed")); err != nil {
			return err
		}
		return tx.Bucket(store.BucketMeta).Put([]byte("schema"), binary.BigEndian.AppendUint64(nil, 1))
	}))
	crash(t, q, st)

	q, st = openQueue(t, path)
	require.Equal(t, 1, q.Recovered(), "the claimed entry goes back to queued")
	require.Zero(t, tailLen(t, q, st))
	require.Equal(t, 3, counts(t, q)[queue.StateQueued])
	claimed, err := q.Claim(ctx, 10, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{"Q000000000001", "Q000000000002", "Q000000000003"}, ids(claimed))
	require.NoError(t, st.View(func(tx *bbolt.Tx) error {
		require.Equal(t, uint64(store.SchemaVersion), binary.BigEndian.Uint64(tx.Bucket(store.BucketMeta).Get([]byte("schema"))))
		return nil
	}))
}

func TestDamagedIndexMarkIsAnError(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	enqueue(t, q, 1)
	require.NoError(t, st.Update(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(store.BucketQueue).Put([]byte("indexed"), []byte{1, 2, 3})
	}))
	_, err := q.Counts()
	require.ErrorContains(t, err, "index mark is damaged")
	_, err = q.Claim(ctx, 1, t0.Add(24*time.Hour))
	require.ErrorContains(t, err, "index mark is damaged")
	require.NoError(t, st.Update(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(store.BucketQueue).Put([]byte("indexed"), make([]byte, 8))
	}), "repaired so the cleanup's index check can run")
}

// A long tail is indexed a slice per claim, and every claim that finds a
// non-empty tail claims something, oldest first.
func TestClaimIndexesALongTailInSlices(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	queue.SetTailIndexBatch(q, 2)
	for i := 1; i <= 5; i++ {
		enqueue(t, q, i)
	}
	for i, tail := range []int{3, 1, 0, 0, 0} {
		claimOne(t, q, fmt.Sprintf("Q%012d", i+1))
		require.Equal(t, tail, tailLen(t, q, st), "after claim %d", i+1)
		require.NoError(t, queue.CheckIndexes(st))
	}
	claimed, err := q.Claim(ctx, 10, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.Empty(t, claimed)
}

// A claim for more than a slice indexes as many tail entries as it claims.
func TestClaimOfMoreThanASliceGetsThemAll(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	queue.SetTailIndexBatch(q, 2)
	for i := 1; i <= 5; i++ {
		enqueue(t, q, i)
	}
	claimed, err := q.Claim(ctx, 4, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.Len(t, claimed, 4)
	require.Equal(t, 1, tailLen(t, q, st))
}

// A delete request after a long outage indexes the tail in commits of a
// slice each, then makes its own small commit.
func TestDeleteIndexesALongTailInSlices(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	queue.SetTailIndexBatch(q, 2)
	for i := 1; i <= 7; i++ {
		enqueue(t, q, i)
	}
	require.NoError(t, q.ApplyAll(ctx))
	before := st.Stats().Commits
	_, action, err := q.RequestDelete(ctx, "UNKNOWN-1", "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action)
	require.Equal(t, uint64(3+1), st.Stats().Commits-before, "7 → 5 → 3 → 1 in slices of 2, then the delete's own commit")
	require.Zero(t, tailLen(t, q, st))
	require.Equal(t, 7, counts(t, q)[queue.StateQueued])
}

func TestOpenRefusesAnIndexMarkPastTheLastEntry(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.db")
	q, st := openQueue(t, path)
	enqueue(t, q, 1)
	require.NoError(t, q.ApplyAll(ctx))
	require.NoError(t, st.Update(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(store.BucketQueue).Put([]byte("indexed"), binary.BigEndian.AppendUint64(nil, 5))
	}))
	_, err := queue.Open(ctx, st, queue.Options{})
	require.ErrorIs(t, err, store.ErrCorrupt)
	require.ErrorContains(t, err, "index mark 5 is past its last entry 1")
	require.Error(t, queue.CheckIndexes(st))
	require.NoError(t, st.Update(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(store.BucketQueue).Put([]byte("indexed"), binary.BigEndian.AppendUint64(nil, 0))
	}), "repaired so the cleanup's index check can run")
}

// Enqueues (new, replayed and conflicting, whose failure makes the group
// commit run again without them), claims, finishes and delete requests run
// at once and share commits; the tail and the indexes must stay exact and
// every acknowledged receipt present.
func TestConcurrentMixKeepsTheTailExact(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	queue.SetTailIndexBatch(q, 3)
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		wg    sync.WaitGroup
	)
	for g := range 4 {
		wg.Go(func() {
			for i := range 60 {
				n := g*1000 + i
				e, _, err := q.Enqueue(ctx, receipt(n))
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				acked[e.QueueID] = true
				mu.Unlock()
				_, replayed, err := q.Enqueue(ctx, receipt(n))
				assert.NoError(t, err)
				assert.True(t, replayed)
				bad := receipt(n)
				bad.BodyHash = "other"
				if _, _, err = q.Enqueue(ctx, bad); err == nil {
					// Only a correction of a receipt cancelled meanwhile.
					first, err := q.Get(e.QueueID)
					assert.NoError(t, err)
					assert.Equal(t, queue.StateCancelled, first.State)
				} else {
					assert.ErrorIs(t, err, queue.ErrConflict)
				}
			}
		})
	}
	wg.Go(func() { // a sender
		for range 200 {
			got, err := q.Claim(ctx, 2, t0.Add(24*time.Hour))
			if !assert.NoError(t, err) {
				return
			}
			for _, e := range got {
				next := queue.StateSent
				if e.Kind == queue.KindDelete {
					next = queue.StateDeleted
				}
				_, err := q.Finish(ctx, queue.Finishing{QueueID: e.QueueID, Attempt: queue.Attempt{At: t0, Result: queue.ResultSuccess}, Next: next, Outcome: &queue.Outcome{Status: "SUCCESS", ID: "U" + e.QueueID}, NextAttemptAt: time.Time{}})

				assert.NoError(t, err)
			}
		}
	})
	wg.Go(func() { // a till cancelling now and then
		for i := range 40 {
			_, _, err := q.RequestDelete(ctx, fmt.Sprintf("Q%012d", 1+i*5), "", t0)
			if err != nil && !errors.Is(err, queue.ErrNotFound) { // not enqueued yet
				assert.ErrorIs(t, err, queue.ErrIllegalTransition)
			}
		}
	})
	wg.Wait()
	require.NoError(t, queue.CheckIndexes(st))
	for id := range acked {
		_, err := q.Get(id)
		require.NoError(t, err)
	}
	var got []string
	after := ""
	for {
		page, next, err := q.List(queue.ListOptions{State: queue.StateQueued, Limit: 7, After: after})
		require.NoError(t, err)
		got = append(got, ids(page)...)
		if next == "" {
			break
		}
		after = next
	}
	require.True(t, slices.IsSorted(got), "queued entries are listed in FIFO order")
	require.Len(t, got, counts(t, q)[queue.StateQueued])
}

func TestClaimableAheadCountsIndexedAndTailEntriesDueBefore(t *testing.T) {
	t.Parallel()
	q, st := openQueue(t, filepath.Join(t.TempDir(), "receiptd.db"))
	for i := 1; i <= 3; i++ {
		enqueue(t, q, i)
	}
	// Q1 sending, then back to queued with a backoff: not due before
	// now+1h (now is the queue's own clock, openQueue).
	now := t0.Add(time.Hour)
	claimOne(t, q, "Q000000000001")
	_, err := q.Finish(ctx, queue.Finishing{QueueID: "Q000000000001", Attempt: queue.Attempt{At: now, Result: queue.ResultTransient}, Next: queue.StateQueued, Outcome: nil, NextAttemptAt: now.Add(time.Hour)})
	require.NoError(t, err)
	enqueue(t, q, 4)
	enqueue(t, q, 5)
	require.Equal(t, 2, tailLen(t, q, st))
	for _, c := range []struct {
		id    string
		now   time.Time
		limit int
		want  int
	}{
		{"Q000000000005", now, 10, 3},                    // Q2, Q3 indexed and Q4 in the tail; Q1 not due
		{"Q000000000005", now.Add(2 * time.Hour), 10, 4}, // Q1 due too
		{"Q000000000005", now, 2, 2},                     // stops at the limit
		{"Q000000000004", now, 10, 2},                    // Q2, Q3
		{"Q000000000002", now, 10, 0},                    // Q1 is not due
	} {
		n, err := q.ClaimableAhead(c.id, c.now, c.limit)
		require.NoError(t, err)
		require.Equal(t, c.want, n, "%s at %v, limit %d", c.id, c.now, c.limit)
	}
}

// A delete that cannot be sent yet (its receipt is still held) holds up
// nothing, so it does not count as ahead.
func TestClaimableAheadSkipsDeletesThatWait(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	now := t0.Add(time.Hour)
	id := enqueue(t, q, 1).QueueID
	claimOne(t, q, id)
	_, err := q.Finish(ctx, queue.Finishing{QueueID: id, Attempt: queue.Attempt{At: now, Result: queue.ResultAmbiguous}, Next: queue.StateHeld, Outcome: nil, NextAttemptAt: time.Time{}})
	require.NoError(t, err)
	_, action, err := q.RequestDelete(ctx, id, "", now)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action, "it waits for the held receipt")
	next := enqueue(t, q, 2).QueueID
	n, err := q.ClaimableAhead(next, now, 10)
	require.NoError(t, err)
	require.Zero(t, n)
}
