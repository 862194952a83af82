package queue_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

// TestRebuild writes entries in several states, with a gap where entries
// were lost, into an empty queue: every index agrees with the entries, a
// retry under a kept idempotency key is a replay, a delete finds a sent
// receipt by its upstream id, and new queueIds continue after the
// sequence given.
func TestRebuild(t *testing.T) {
	src := newQueue(t)
	for i := 1; i <= 6; i++ {
		enqueue(t, src, i)
	}
	claimed, err := src.Claim(ctx, 3, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	_, err = src.Finish(ctx, queue.Finishing{QueueID: claimed[0].QueueID, Next: queue.StateSent,
		Attempt: queue.Attempt{At: t0, Result: queue.ResultSuccess}, Outcome: &queue.Outcome{Status: "SUCCESS", ID: "upstream-1"}})
	require.NoError(t, err)
	_, err = src.Finish(ctx, queue.Finishing{QueueID: claimed[1].QueueID, Next: queue.StateRejected,
		Attempt: queue.Attempt{At: t0, Result: queue.ResultRejected}})
	require.NoError(t, err)
	all, _, err := src.List(queue.ListOptions{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, all, 6)
	kept := append(all[:4:4], all[5]) // Q…05 was lost

	dst, st := openQueue(t, filepath.Join(t.TempDir(), "rebuilt.db"))
	if withLog {
		require.ErrorIs(t, dst.Rebuild(ctx, kept, 9), queue.ErrInvalid, "only without a log")
		require.NoError(t, dst.Close(ctx))
		require.NoError(t, st.Close())
		st = storetest.OpenPath(t, st.Path())
		dst, err = queue.Open(ctx, st, queue.Options{})
		require.NoError(t, err)
	}
	require.NoError(t, dst.Rebuild(ctx, kept, 9))
	require.NoError(t, queue.CheckIndexes(st))
	require.ErrorIs(t, dst.Rebuild(ctx, kept, 9), queue.ErrInvalid, "only into an empty queue")
	for _, e := range kept {
		got, err := dst.Get(e.QueueID)
		require.NoError(t, err)
		require.Equal(t, e, got)
	}
	counts, err := dst.Counts()
	require.NoError(t, err)
	require.Equal(t, map[queue.State]int{queue.StateSent: 1, queue.StateRejected: 1, queue.StateSending: 1, queue.StateQueued: 2}, nonzero(counts))

	replay, replayed, err := dst.Enqueue(ctx, receipt(6))
	require.NoError(t, err)
	require.True(t, replayed, "a POS retry under a kept key is a replay")
	require.Equal(t, kept[4].QueueID, replay.QueueID)
	fresh := enqueue(t, dst, 7)
	require.Equal(t, queue.FormatID(10), fresh.QueueID, "queueIds continue after the sequence")
	d, act, err := dst.RequestDelete(ctx, "upstream-1", "", t0)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, act)
	require.Equal(t, kept[0].QueueID, d.DeleteTarget, "the upstream id index was rebuilt")
	require.NoError(t, queue.CheckIndexes(st))
}

func nonzero(m map[queue.State]int) map[queue.State]int {
	out := map[queue.State]int{}
	for s, n := range m {
		if n != 0 {
			out[s] = n
		}
	}
	return out
}
