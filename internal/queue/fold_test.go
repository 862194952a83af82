package queue_test

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
)

// TestAnOnlineSaleAppliedInOneCommitLeavesTheFileAsInTwo: an online sale's
// two records (its receipt logged in sending, its outcome) applied in one
// commit, where applyTx writes the entry once in its outcome's state,
// leave the file byte for byte as applying each in a commit of its own
// does (the entry, its state and pending rows, the counters, the
// idempotency and upstream rows, the sequences, the applied mark), for
// every state an attempt can end in, with a queued receipt logged
// between the two records. The one row told apart otherwise is the
// sending counter's: two commits leave it at zero (one up, one down),
// one never writes it; a counter at zero reads as no row.
func TestAnOnlineSaleAppliedInOneCommitLeavesTheFileAsInTwo(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Hour)
	at := queue.Attempt{At: now, Duration: time.Millisecond}
	ends := []queue.Finishing{
		{Next: queue.StateSent, Outcome: &queue.Outcome{Status: "SUCCESS", ID: "u1"}},
		{Next: queue.StatePayment, Outcome: &queue.Outcome{Status: "PAYMENT", ID: "u2"}},
		{Next: queue.StateRejected, Outcome: &queue.Outcome{Status: "ERROR", Message: "bad TIN"}},
		{Next: queue.StateHeld, Outcome: queue.HeldOutcome(3)},
		{Next: queue.StateQueued, NextAttemptAt: now.Add(time.Minute)},
	}
	results := []queue.Result{queue.ResultSuccess, queue.ResultPayment, queue.ResultRejected, queue.ResultAmbiguous, queue.ResultTransient}
	file := func(applyEach bool) map[string]string {
		path := filepath.Join(t.TempDir(), "receiptd.db")
		q, st := openLogged(t, path, 0)
		for i, f := range ends {
			e, _, err := q.Enqueue(ctx, sendingReceipt(10*i+1))
			require.NoError(t, err)
			if applyEach {
				require.NoError(t, q.ApplyAll(ctx))
			}
			enqueue(t, q, 10*i+2)
			f.QueueID, f.Awaited, f.Attempt = e.QueueID, true, at
			f.Attempt.Result = results[i]
			_, err = q.Finish(ctx, f)
			require.NoError(t, err)
			if applyEach {
				require.NoError(t, q.ApplyAll(ctx))
			}
		}
		require.NoError(t, q.ApplyAll(ctx))
		require.NoError(t, queue.CheckIndexes(st))
		got := dumpFile(t, st)
		closeLogged(t, q, st)
		return got
	}
	apart, together := file(true), file(false)
	require.NotEmpty(t, apart)
	require.Equal(t, apart, together)
}

// dumpFile is every key of the queue's buckets with its value, and every
// bucket's sequence, but the log's id (each log draws its own) and the
// counters at zero.
func dumpFile(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(path string, b *bbolt.Bucket)
	walk = func(path string, b *bbolt.Bucket) {
		out[path+" sequence"] = fmt.Sprint(b.Sequence())
		require.NoError(t, b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(path+"/"+string(k), b.Bucket(k))
			} else if !(path == "" && string(k) == "logId") && !(path == "/counts" && binary.BigEndian.Uint64(v) == 0) {
				out[path+"/"+fmt.Sprintf("%q", k)] = fmt.Sprintf("%x", v)
			}
			return nil
		}))
	}
	require.NoError(t, st.View(func(tx *bbolt.Tx) error {
		walk("", tx.Bucket(store.BucketQueue))
		return nil
	}))
	return out
}
