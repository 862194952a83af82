package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

func TestLatestIsNewestFirstWithinOneState(t *testing.T) {
	t.Parallel()
	q := newQueue(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, enqueue(t, q, i).QueueID)
	}
	// Entries of neighbouring states must not leak in: "sending" sorts just
	// before "sent" in the state index.
	_, _, err := q.RequestDelete(context.Background(), ids[4], "", time.Now())
	require.NoError(t, err)
	claimOne(t, q, ids[0])
	finish(t, q, ids[0], queue.StateSent, &queue.Outcome{Status: "SUCCESS", ID: "1"})
	claimOne(t, q, ids[1])

	got, err := q.Latest(queue.StateQueued, 2)
	require.NoError(t, err)
	require.Equal(t, []string{ids[3], ids[2]}, []string{got[0].QueueID, got[1].QueueID})

	got, err = q.Latest(queue.StateSent, 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, ids[0], got[0].QueueID)

	got, err = q.Latest(queue.StateCancelled, 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, ids[4], got[0].QueueID)

	got, err = q.Latest(queue.StateRejected, 10)
	require.NoError(t, err)
	require.Empty(t, got)
}
