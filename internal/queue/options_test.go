package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

// Options.TailIndexBatch is how many tail entries a claim indexes; zero
// is the default of 1000. A queue carries its own, so queues opened with
// different values (tests that run in parallel) do not meet.
func TestOptionsTailIndexBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		batch int
		left  int // tail entries left after one claim of one
	}{
		{"zero is 1000", 0, 0},
		{"two", 2, 3},
		{"one claim indexes at least what it claims", 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := storetest.Open(t)
			q, err := queue.Open(ctx, st, queue.Options{TailIndexBatch: tc.batch})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, q.Close(ctx)) })
			for i := range 5 {
				key := fmt.Sprintf("opt%d", i)
				_, _, err := q.Enqueue(ctx, queue.NewReceipt{IdemKey: key, BodyHash: "h" + key,
					Body: []byte(`{"billIdSuffix":"` + key + `"}`)})
				require.NoError(t, err)
			}
			n, err := queue.TailLen(st)
			require.NoError(t, err)
			require.Equal(t, 5, n, "enqueues leave their entries in the tail")
			claimed, err := q.Claim(ctx, 1, time.Now())
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			n, err = queue.TailLen(st)
			require.NoError(t, err)
			require.Equal(t, tc.left, n)
			require.NoError(t, queue.CheckIndexes(st))
		})
	}
}
