package syncer_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// A slot taken while the upstream answers sends the receipt whose accept
// carried its claim, at once and without a claim: its answer reaches the
// waiting request, its outcome is recorded, it is issued once. No slot is
// to be had while every slot is taken, nor while a queued receipt waits,
// nor while the upstream is down; a slot given back is free again.
func TestSlotSendsAClaimedAccept(t *testing.T) {
	t.Parallel()
	s, q, w, mb, ctx := startSlotWorker(t, func(w *syncer.Worker) {
		require.Nil(t, w.TakeSlot(), "not running")
	})
	var slot *syncer.Slot
	require.Eventually(t, func() bool { slot = w.TakeSlot(); return slot != nil }, 5*time.Second, time.Millisecond)
	require.Nil(t, w.TakeSlot(), "its one slot is taken")
	slot.Release()
	slot = w.TakeSlot()
	require.NotNil(t, slot, "given back, the slot is free again")

	e, _, err := q.Enqueue(ctx, nr("S1", true))
	require.NoError(t, err)
	require.Equal(t, queue.StateSending, e.State)
	slot.Send(e)
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	res, ok := mb.Await(wctx, e.QueueID)
	require.True(t, ok, "the upstream's answer reaches the waiting request")
	require.Equal(t, 200, res.StatusCode)
	require.Eventually(t, func() bool {
		got, err := q.Get(e.QueueID)
		return err == nil && got.State == queue.StateSent
	}, 5*time.Second, 5*time.Millisecond)
	require.Len(t, s.Receipts(), 1, "issued once")

	// A queued receipt that waits holds up the next claimed accept. The
	// upstream is down so that it keeps waiting.
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	require.Eventually(t, func() bool { slot = w.TakeSlot(); return slot != nil }, 5*time.Second, time.Millisecond)
	_, _, err = q.Enqueue(ctx, nr("S2", false))
	require.NoError(t, err)
	require.Nil(t, w.TakeSlot(), "the slot is taken")
	slot.Release()
	require.Eventually(t, func() bool { return !w.Status().Up }, 5*time.Second, 5*time.Millisecond)
	require.Nil(t, w.TakeSlot(), "the upstream is down")
}

// A sale sent by the request that accepted it frees its slot as soon as
// its answer is written (done), while its outcome waits for its flush:
// a POS that posts its next sale at once finds the slot free, and that
// sale too is sent by its own request, not queued behind a flush.
func TestASaleSentHereFreesItsSlotWithItsAnswer(t *testing.T) {
	t.Parallel()
	s, q, w, _, ctx := startSlotWorker(t, nil)
	var slot *syncer.Slot
	require.Eventually(t, func() bool { slot = w.TakeSlot(); return slot != nil }, 5*time.Second, time.Millisecond)
	var ids []string
	for _, suffix := range []string{"H1", "H2", "H3"} {
		require.NotNil(t, slot, "%s: the slot is free once the last sale's answer is written", suffix)
		e, _, err := q.Enqueue(ctx, nr(suffix, true))
		require.NoError(t, err)
		res, done := slot.SendHere(e)
		require.True(t, res.Answered, suffix)
		require.Equal(t, 200, res.StatusCode, suffix)
		done()
		ids = append(ids, e.QueueID)
		// At once: the outcome's flush waits up to queue.OutcomeFlushGrace
		// for another flush, and the slot was held through it.
		slot = w.TakeSlot()
	}
	require.NotNil(t, slot, "the slot is free once the last sale's answer is written")
	slot.Release()
	for _, id := range ids {
		require.Eventually(t, func() bool {
			got, err := q.Get(id)
			return err == nil && got.State == queue.StateSent
		}, 5*time.Second, 5*time.Millisecond, id)
	}
	require.Len(t, s.Receipts(), len(ids), "each issued once")
}

// startSlotWorker starts a worker with one send slot on a queue with a
// write-ahead log, sending to a simulator; before, when not nil, sees the
// worker before it runs. Everything is closed at the test's end.
func startSlotWorker(t *testing.T, before func(*syncer.Worker)) (*sim.Sim, *queue.Queue, *syncer.Worker, *syncer.Mailbox, context.Context) {
	t.Helper()
	s := sim.New(sim.Options{})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	path := filepath.Join(t.TempDir(), "receiptd.db")
	st, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(context.Background(), st, queue.Options{LogDir: path + ".wal"})
	require.NoError(t, err)
	c, err := client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: s.URL(), Timeout: 2 * time.Second})
	require.NoError(t, err)
	mb := syncer.NewMailbox(syncer.MailboxConfig{}, zap.NewNop(), nil)
	cfg := syncer.Config{Concurrency: 1, MinBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, Answers: mb}
	w := syncer.New(q, c, cfg, zap.NewNop(), nil)
	if before != nil {
		before(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		require.NoError(t, q.Close(context.Background()))
		require.NoError(t, st.Check())
		require.NoError(t, st.Close())
	})
	return s, q, w, mb, ctx
}

// nr is a new receipt; sending: its accept carries its claim.
func nr(suffix string, sending bool) queue.NewReceipt {
	body := testkit.Receipt(suffix)
	return queue.NewReceipt{IdemKey: "k-" + suffix, Body: []byte(body), BodyHash: receipt.Fingerprint([]byte(body)),
		BillIDSuffix: suffix, Sending: sending}
}
