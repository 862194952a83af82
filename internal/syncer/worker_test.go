package syncer_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func TestDrainsEveryReceiptOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 1})
	entries := r.enqueueN("ok", 40)
	r.start()
	r.waitSettled(10 * time.Second)

	issued := r.issuedCount()
	for _, e := range entries {
		got := r.get(e.QueueID)
		require.Equal(t, queue.StateSent, got.State, got.QueueID)
		require.Len(t, got.Outcome.ID, 33)
		require.NotEmpty(t, got.Outcome.Date)
		require.Equal(t, 1, issued[got.BillIDSuffix], got.BillIDSuffix)
	}
	require.Len(t, issued, 40)
	require.True(t, r.w.Status().Up)
	require.False(t, r.w.Status().LastSuccess.IsZero())
}

func TestOutageThenRecovery(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 2})
	require.NoError(t, r.sim.SetFaults(sim.Faults{Down: true}))
	entries := r.enqueueN("out", 20)
	r.start()

	const outage = time.Second
	time.Sleep(outage)
	require.False(t, r.w.Status().Up, "the worker should know the upstream is down")
	var during []queue.Entry
	for _, e := range entries {
		got := r.get(e.QueueID)
		// Sending: the probe of the moment has claimed it.
		require.Contains(t, []queue.State{queue.StateQueued, queue.StateSending}, got.State)
		during = append(during, got)
	}
	// Concurrency sends at first, then one probe per backoff step: the
	// shortest jittered steps are 10, 20, 40, then 50 ms at the cap.
	probes := attempts(during, queue.ResultNotSent)
	require.LessOrEqual(t, probes, 4+int(outage/(50*time.Millisecond))+3, "worker hammered a dead upstream")
	require.GreaterOrEqual(t, probes, 2, "worker stopped probing")

	require.NoError(t, r.sim.SetFaults(sim.Faults{}))
	r.waitSettled(10 * time.Second)
	issued := r.issuedCount()
	for _, e := range entries {
		require.Equal(t, queue.StateSent, r.get(e.QueueID).State)
		require.Equal(t, 1, issued[e.BillIDSuffix], "delivered exactly once")
	}
	require.True(t, r.w.Status().Up)
}

func TestServerErrorsAreRetried(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 3})
	require.NoError(t, r.sim.SetFaults(sim.Faults{ErrorRate: 0.3}))
	entries := r.enqueueN("err", 60)
	r.start()
	r.waitSettled(30 * time.Second)

	issued := r.issuedCount()
	var all []queue.Entry
	for _, e := range entries {
		got := r.get(e.QueueID)
		require.Equal(t, queue.StateSent, got.State)
		require.Equal(t, 1, issued[e.BillIDSuffix], "a 503 issues nothing, so exactly once")
		all = append(all, got)
	}
	require.Positive(t, attempts(all, queue.ResultTransient), "the 5xx share was not exercised")
}

func TestProcessThenDrop(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	// A 30% drop share gives some entry three drops in a row; this test is
	// about the retries, not about holding (TestMaxAmbiguousHolds).
	cfg.MaxAmbiguous = 100
	r := newRig(t, cfg, sim.Options{Seed: 4})
	require.NoError(t, r.sim.SetFaults(sim.Faults{DropRate: 0.3}))
	entries := r.enqueueN("drop", 60)
	r.start()
	r.waitSettled(30 * time.Second)

	issued := r.issuedCount()
	dups := 0
	for _, e := range entries {
		got := r.get(e.QueueID)
		require.Equal(t, queue.StateSent, got.State)
		require.GreaterOrEqual(t, issued[e.BillIDSuffix], 1)
		if issued[e.BillIDSuffix] > 1 {
			dups++
			require.Positive(t, got.Ambiguous, "duplicate without a recorded ambiguous attempt: %s", got.QueueID)
			require.GreaterOrEqual(t, got.Ambiguous, issued[e.BillIDSuffix]-1)
		}
	}
	require.Positive(t, dups, "the drop share was not exercised")
}

// TestMaxAmbiguousHolds: under the retry policy, a receipt whose answers
// are all lost is sent MaxAmbiguous times, then held with a message saying
// why; an operator's retry gives it one more attempt.
func TestMaxAmbiguousHolds(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.MaxAmbiguous = 3
	r := newRig(t, cfg, sim.Options{Seed: 5})
	require.NoError(t, r.sim.SetFaults(sim.Faults{DropRate: 1}))
	e := r.enqueue(testkit.Receipt("max1"))
	r.start()
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateHeld }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // several backoff steps: nothing more is sent
	require.Equal(t, 3, r.issuedCount()["max1"])
	got := r.get(e.QueueID)
	require.Equal(t, 3, got.Ambiguous)
	require.Contains(t, got.Outcome.Message, "held after 3 ambiguous attempts")

	_, err := r.q.Retry(context.Background(), e.QueueID, true)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateHeld }, 10*time.Second, 10*time.Millisecond)
	r.stop()
	require.Equal(t, 4, r.issuedCount()["max1"])
	require.Equal(t, 4, r.get(e.QueueID).Ambiguous)
}

func TestAmbiguousHeld(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.OnAmbiguous = "hold"
	r := newRig(t, cfg, sim.Options{Seed: 5})
	require.NoError(t, r.sim.SetFaults(sim.Faults{DropRate: 1}))
	e := r.enqueue(testkit.Receipt("hold1"))
	r.start()
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateHeld }, 5*time.Second, 10*time.Millisecond)
	r.stop()
	require.Equal(t, 1, r.issuedCount()["hold1"], "a held entry is not sent again")
	got := r.get(e.QueueID)
	require.Equal(t, 1, got.Ambiguous)

	// An operator's retry sends it again.
	require.NoError(t, r.sim.SetFaults(sim.Faults{}))
	_, err := r.q.Retry(context.Background(), e.QueueID, true)
	require.NoError(t, err)
	r.start()
	r.waitSettled(5 * time.Second)
	require.Equal(t, queue.StateSent, r.get(e.QueueID).State)
}

func TestRejectedDoesNotBlock(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 6})
	good1 := r.enqueueN("a", 50)
	// Totals that do not add up: the simulator answers ERROR.
	bad := r.enqueue(strings.Replace(testkit.Receipt("bad"), `"totalAmount":12345.6789012345678901,"merchantTin"`, `"totalAmount":1,"merchantTin"`, 1))
	good2 := r.enqueueN("b", 50)
	r.start()
	r.waitSettled(20 * time.Second)

	got := r.get(bad.QueueID)
	require.Equal(t, queue.StateRejected, got.State)
	require.NotEmpty(t, got.Outcome.Message)
	require.Equal(t, "ERROR", got.Outcome.Status)
	require.Len(t, got.Attempts, 1, "a rejected receipt is never retried by itself")
	for _, e := range append(good1, good2...) {
		require.Equal(t, queue.StateSent, r.get(e.QueueID).State)
	}
}

func TestPaymentOutcome(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 7})
	e := r.enqueue(strings.Replace(testkit.Receipt("pay1"), `"status":"PAID"`, `"status":"PAY"`, 1))
	r.start()
	r.waitSettled(5 * time.Second)
	got := r.get(e.QueueID)
	require.Equal(t, queue.StatePayment, got.State)
	require.Equal(t, "PAYMENT", got.Outcome.Status)
	require.Len(t, got.Outcome.ID, 33)
}

func TestDeletesInterleavedWithCreates(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 8})
	ctx := context.Background()
	sent := r.enqueueN("s", 5)
	r.start()
	r.waitSettled(5 * time.Second)
	r.stop()

	// Deletes of sent receipts, a cancel of an unsent one, creates between
	// them and a delete of an id nobody issued.
	var deletes []queue.Entry
	for i, e := range sent {
		d, action, err := r.q.RequestDelete(ctx, e.QueueID, "", time.Now())
		require.NoError(t, err)
		require.Equal(t, queue.DeleteQueued, action)
		deletes = append(deletes, d)
		r.enqueue(testkit.Receipt("mid" + string(rune('0'+i))))
	}
	unsent := r.enqueue(testkit.Receipt("cancelme"))
	_, action, err := r.q.RequestDelete(ctx, unsent.QueueID, "", time.Now())
	require.NoError(t, err)
	require.Equal(t, queue.DeleteCancelled, action)
	unknown, _, err := r.q.RequestDelete(ctx, "999999999999999999999999999999999", "2026-11-22 10:00:00", time.Now())
	require.NoError(t, err)

	r.start()
	r.waitSettled(10 * time.Second)
	deleted := r.sim.Deleted()
	for i, d := range deletes {
		got := r.get(d.QueueID)
		require.Equal(t, queue.StateDeleted, got.State)
		require.Equal(t, r.get(sent[i].QueueID).Outcome.ID, got.DeleteID)
		require.Contains(t, deleted, got.DeleteID)
	}
	require.Equal(t, queue.StateCancelled, r.get(unsent.QueueID).State)
	require.Zero(t, r.issuedCount()["cancelme"], "a cancelled receipt is never sent")
	require.Equal(t, queue.StateDeleteRejected, r.get(unknown.QueueID).State)
}

func TestDeleteWaitsForItsCreate(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 9, Latency: 300 * time.Millisecond})
	e := r.enqueue(testkit.Receipt("slow1"))
	r.start()
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSending }, 5*time.Second, 5*time.Millisecond)
	d, action, err := r.q.RequestDelete(context.Background(), e.QueueID, "", time.Now())
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action)
	r.waitSettled(10 * time.Second)
	require.Equal(t, queue.StateSent, r.get(e.QueueID).State)
	got := r.get(d.QueueID)
	require.Equal(t, queue.StateDeleted, got.State)
	require.Equal(t, r.get(e.QueueID).Outcome.ID, got.DeleteID)
}

func TestLotteryAndQRNeverStoredOrLogged(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 10})
	require.NoError(t, r.sim.SetFaults(sim.Faults{DropRate: 0.2}))
	r.enqueueN("secret", 20)
	r.enqueue(strings.Replace(testkit.Receipt("pay"), `"status":"PAID"`, `"status":"PAY"`, 1))
	r.start()
	r.waitSettled(20 * time.Second)
	r.close()

	db, err := os.ReadFile(r.dbPath)
	require.NoError(t, err)
	logs := r.logs.String()
	require.NotEmpty(t, logs)
	issued := r.sim.Receipts()
	require.NotEmpty(t, issued)
	for _, is := range issued {
		require.NotEmpty(t, is.Lottery)
		require.Empty(t, containsAny(string(db), is.Lottery, is.QRData), "lottery or QR data on disk")
		require.Empty(t, containsAny(logs, is.Lottery, is.QRData), "lottery or QR data in the log")
	}
	require.NotContains(t, logs, testkit.CustomerTIN, "customer TIN in the log")
}

func TestAwaitHandsOverTheAnswer(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 11})
	r.start()
	e := r.enqueue(testkit.Receipt("wait1"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, ok := r.answers.Await(ctx, e.QueueID)
	require.True(t, ok)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, queue.StateSent, res.State)
	lottery := r.sim.Receipts()[0].Lottery
	require.Contains(t, string(res.Body), lottery)

	again, ok := r.answers.Recent(e.QueueID)
	require.True(t, ok, "a replay within the TTL gets the answer again")
	require.Equal(t, res.Body, again.Body)
}

func TestAwaitReturnsAtOnceWhenDown(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 12})
	require.NoError(t, r.sim.SetFaults(sim.Faults{Down: true}))
	r.start()
	first := r.enqueue(testkit.Receipt("down1"))
	require.Eventually(t, func() bool { return !r.w.Status().Up }, 5*time.Second, 5*time.Millisecond)

	e := r.enqueue(testkit.Receipt("down2"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	done := make(chan bool, 1)
	go func() {
		_, ok := r.answers.Await(ctx, e.QueueID)
		done <- ok
	}()
	select {
	case ok := <-done:
		require.False(t, ok)
	case <-time.After(30 * time.Second):
		t.Fatal("Await waited although the upstream is known down")
	}
	require.NotEqual(t, queue.StateSent, r.get(first.QueueID).State)
}

func TestAgeingAlertLoggedOncePerCrossing(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.UnsentWarn, cfg.UnsentCritical = 100*time.Millisecond, 800*time.Millisecond
	r := newRig(t, cfg, sim.Options{Seed: 13})
	require.NoError(t, r.sim.SetFaults(sim.Faults{Down: true}))
	r.enqueue(testkit.Receipt("old1"))
	r.start()
	require.Eventually(t, func() bool { return r.w.Status().Alert == syncer.AlertCritical }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // several more checks at the same level
	require.NoError(t, r.sim.SetFaults(sim.Faults{}))
	require.Eventually(t, func() bool { return r.w.Status().Alert == syncer.AlertNone }, 5*time.Second, 10*time.Millisecond)
	r.stop()

	logs := r.logs.String()
	// A slow check may jump from none straight to critical; it never
	// repeats a level.
	require.LessOrEqual(t, strings.Count(logs, "past the warning age"), 1)
	require.Equal(t, 1, strings.Count(logs, "past the critical age"))
	require.Equal(t, 1, strings.Count(logs, "no longer ageing"))
}

func TestAlertLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		age  time.Duration
		want string
	}{
		{"fresh", time.Hour, syncer.AlertNone},
		{"at warn", 24 * time.Hour, syncer.AlertWarn},
		{"between", 48 * time.Hour, syncer.AlertWarn},
		{"at critical", 72 * time.Hour, syncer.AlertCritical},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, syncer.AlertLevel(tc.age, 24*time.Hour, 72*time.Hour))
		})
	}
}

func TestShutdownRecordsInFlightSends(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.ShutdownTimeout = 5 * time.Second
	r := newRig(t, cfg, sim.Options{Seed: 14, Latency: 300 * time.Millisecond})
	e := r.enqueue(testkit.Receipt("inflight"))
	r.start()
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSending }, 5*time.Second, 5*time.Millisecond)
	r.stop() // returns only after the send finished and was recorded
	require.Equal(t, queue.StateSent, r.get(e.QueueID).State)
}

func TestShutdownIsBoundedWhileAProbeHangs(t *testing.T) {
	cfg := fastConfig()
	cfg.ShutdownTimeout = 100 * time.Millisecond
	r := newRig(t, cfg, sim.Options{Seed: 15})
	require.NoError(t, r.sim.SetFaults(sim.Faults{Down: true}))
	e := r.enqueue(testkit.Receipt("hang"))
	r.start()
	require.Eventually(t, func() bool { return !r.w.Status().Up }, 5*time.Second, 5*time.Millisecond)

	// The upstream comes back but answers after 3 s: the next probe hangs
	// for the client's whole 2 s timeout unless shutdown cuts it short.
	require.NoError(t, r.sim.SetFaults(sim.Faults{Latency: 3 * time.Second}))
	require.Eventually(t, func() bool { return r.get(e.QueueID).State == queue.StateSending }, 5*time.Second, 5*time.Millisecond)
	stopped := make(chan struct{})
	go func() {
		r.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(1500 * time.Millisecond):
		t.Fatal("Run outlived shutdown_timeout by far while a probe was in flight")
	}
	got := r.get(e.QueueID)
	require.Equal(t, queue.StateQueued, got.State, "the cut-short attempt is recorded, not left in sending")
	// Cut short before its request was written it is not_sent, after it
	// ambiguous: either is recorded, never left open.
	require.Contains(t, []queue.Result{queue.ResultAmbiguous, queue.ResultNotSent}, got.Attempts[len(got.Attempts)-1].Result)
}

func TestLastSuccessSurvivesARestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 16})
	r.enqueue(testkit.Receipt("before-restart"))
	r.start()
	r.waitSettled(5 * time.Second)
	r.stop()
	sent := r.w.Status().LastSuccess
	require.False(t, sent.IsZero())

	// A new worker on the same queue (a restarted daemon) during an outage.
	require.NoError(t, r.sim.SetFaults(sim.Faults{Down: true}))
	r.w = syncer.New(r.q, r.c, fastConfig(), zap.NewNop(), nil)
	r.start()
	require.Eventually(t, func() bool { return !r.w.Status().LastSuccess.IsZero() }, 5*time.Second, 5*time.Millisecond)
	require.WithinDuration(t, sent, r.w.Status().LastSuccess, time.Second)
}
