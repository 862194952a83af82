package queue_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

// TestSettledAgreesWithTheFullReading: whether a claim would take
// anything is answered quickly on a till whose sales are sent as they are
// made (Settled), and by the full reading of the log's records and the
// file's index otherwise. Through random tills' histories (sales whose
// accept carries the claim and queued ones, claims, outcomes of every
// kind recorded in the log or in the file, retries due now or later,
// deletes, the log applied at random moments, the clock moving on), after
// every step: a quick answer is what a claim then finds (it takes
// nothing, or takes the tail), any other is the full reading's; both
// kinds are given.
func TestSettledAgreesWithTheFullReading(t *testing.T) {
	t.Parallel()
	quick, full := 0, 0
	for seed := range 12 {
		rng := rand.New(rand.NewPCG(uint64(seed), 41))
		q, st := openLogged(t, filepath.Join(t.TempDir(), "receiptd.db"), 0)
		now := t0.Add(time.Hour)
		var sending, receipts []queue.Entry
		n := 0
		for step := range 300 {
			op := rng.IntN(10)
			switch {
			case op < 3: // a sale while the tax service answers: its accept carries the claim
				n++
				e, _, err := q.Enqueue(ctx, sendingReceipt(n))
				require.NoError(t, err)
				sending, receipts = append(sending, e), append(receipts, e)
			case op < 4: // a sale while it does not
				n++
				receipts = append(receipts, enqueue(t, q, n))
			case op < 5:
				claimed, err := q.Claim(ctx, 1+rng.IntN(2), now)
				require.NoError(t, err)
				sending = append(sending, claimed...)
			case op < 8 && len(sending) > 0:
				i := rng.IntN(len(sending))
				e := sending[i]
				sending = append(sending[:i], sending[i+1:]...)
				fin := randomOutcome(rng, e, now)
				_, claimed, err := q.FinishAndClaim(ctx, fin, rng.IntN(2), now)
				require.NoError(t, err, "step %d: %s to %s", step, e.QueueID, fin.Next)
				sending = append(sending, claimed...)
			case op < 9 && len(receipts) > 0:
				e := receipts[rng.IntN(len(receipts))]
				_, _, err := q.RequestDelete(ctx, e.QueueID, "", now)
				require.NoError(t, err)
			default:
				if rng.IntN(2) == 0 {
					require.NoError(t, q.ApplyAll(ctx))
				}
				now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
			}
			got, err := q.NothingClaimable(now)
			require.NoError(t, err)
			if _, sure := q.Settled(); !sure {
				want, err := q.NothingToClaimRead(now)
				require.NoError(t, err)
				require.Equal(t, want, got, "seed %d, step %d: nothing to claim", seed, step)
				full++
				continue
			}
			// The quick answer, held to what a claim finds: the log
			// applied and a claim's commit.
			quick++
			claimed, err := q.ClaimUnchecked(ctx, 1, now)
			require.NoError(t, err)
			require.Equal(t, got, len(claimed) == 0, "seed %d, step %d: nothing to claim, quickly; the claim took %d", seed, step, len(claimed))
			sending = append(sending, claimed...)
		}
		closeLogged(t, q, st)
	}
	t.Logf("answered quickly %d times, by the full reading %d times", quick, full)
	require.Positive(t, quick, "the quick answer was given")
	require.Positive(t, full, "the full reading was needed")
}

// randomOutcome is an outcome for e, in sending, that the worker could
// record: for a receipt sent, payment, back in the queue now or later,
// rejected or held; for a delete deleted, back in the queue or rejected.
// Half of them are awaited (a POS waits: recorded in the log), the others
// committed to the file.
func randomOutcome(rng *rand.Rand, e queue.Entry, now time.Time) queue.Finishing {
	fin := queue.Finishing{QueueID: e.QueueID, Awaited: rng.IntN(2) == 0,
		Attempt: queue.Attempt{At: now, Result: queue.ResultSuccess}}
	later := now.Add(time.Duration(rng.IntN(120)) * time.Second)
	if e.Kind == queue.KindDelete {
		switch rng.IntN(3) {
		case 0:
			fin.Next = queue.StateDeleted
			fin.Outcome = &queue.Outcome{Status: "SUCCESS"}
		case 1:
			fin.Next, fin.NextAttemptAt, fin.Attempt.Result = queue.StateDeleteQueued, later, queue.ResultTransient
		default:
			fin.Next, fin.Attempt.Result = queue.StateDeleteRejected, queue.ResultRejected
			fin.Outcome = &queue.Outcome{Status: "ERROR", Message: "no such receipt"}
		}
		return fin
	}
	switch rng.IntN(5) {
	case 0, 1:
		fin.Next = queue.StateSent
		fin.Outcome = &queue.Outcome{Status: "SUCCESS", ID: fmt.Sprintf("%033d", rng.Uint64()), Date: "2026-11-29 10:00:00"}
	case 2:
		fin.Next, fin.NextAttemptAt, fin.Attempt.Result = queue.StateQueued, later, queue.ResultTransient
	case 3:
		fin.Next, fin.Attempt.Result = queue.StateRejected, queue.ResultRejected
		fin.Outcome = &queue.Outcome{Status: "ERROR", Message: "refused"}
	default:
		fin.Next, fin.Attempt.Result = queue.StateHeld, queue.ResultAmbiguous
	}
	return fin
}

// BenchmarkNothingClaimable: the look before each claim on a till that
// sends each sale as it is made, with 50 sales (a record and an outcome
// each) in the log not yet applied, as at a sale a millisecond: the quick
// answer, and the full reading it spares.
//
//	go test -run XXX -bench NothingClaimable -benchmem ./internal/queue
func BenchmarkNothingClaimable(b *testing.B) {
	q, st := openLogged(b, filepath.Join(b.TempDir(), "receiptd.db"), 0)
	b.Cleanup(func() { // before the directory goes (Windows)
		_ = q.Close(ctx)
		_ = st.Close()
	})
	now := t0.Add(time.Hour)
	for n := range 50 {
		e, _, err := q.Enqueue(ctx, sendingReceipt(n+1))
		require.NoError(b, err)
		_, err = q.Finish(ctx, queue.Finishing{QueueID: e.QueueID, Next: queue.StateSent, Awaited: true,
			Outcome: &queue.Outcome{Status: "SUCCESS", ID: fmt.Sprintf("%033d", n)}, Attempt: queue.Attempt{At: now, Result: queue.ResultSuccess}})
		require.NoError(b, err)
	}
	for _, c := range []struct {
		name string
		look func(time.Time) (bool, error)
	}{{"quick", q.NothingClaimable}, {"full reading", q.NothingToClaimRead}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				idle, err := c.look(now)
				if err != nil || !idle {
					b.Fatal(idle, err)
				}
			}
		})
	}
}

// TestFinishWriteInTwoHalves: FinishWrite returns once the outcome's
// record is in the log's file, its Recorded called and every read seeing
// the outcome, before its flush; durable then flushes it and claims, as
// FinishAndClaim does.
func TestFinishWriteInTwoHalves(t *testing.T) {
	t.Parallel()
	q, st := openLogged(t, filepath.Join(t.TempDir(), "receiptd.db"), 0)
	defer closeLogged(t, q, st)
	now := t0.Add(time.Hour)
	e, _, err := q.Enqueue(ctx, sendingReceipt(1))
	require.NoError(t, err)
	queued := enqueue(t, q, 2)
	recorded := false
	fin := queue.Finishing{QueueID: e.QueueID, Next: queue.StateSent, Awaited: true, Recorded: func() { recorded = true },
		Outcome: &queue.Outcome{Status: "SUCCESS", ID: "1"}, Attempt: queue.Attempt{At: now, Result: queue.ResultSuccess}}
	durable, ok, err := q.FinishWrite(ctx, fin)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, recorded)
	require.False(t, q.LogFlushed(), "written, its flush left to durable")
	got, err := q.Get(e.QueueID)
	require.NoError(t, err)
	require.Equal(t, queue.StateSent, got.State)
	require.Equal(t, "1", got.Outcome.ID)

	claimed, err := durable(ctx, 1, now)
	require.NoError(t, err)
	require.True(t, q.LogFlushed())
	require.Equal(t, []string{queued.QueueID}, ids(claimed), "the claim after the flush")
	require.NoError(t, q.ApplyAll(ctx))
	got, err = q.Get(e.QueueID)
	require.NoError(t, err)
	require.Equal(t, queue.StateSent, got.State)
}
