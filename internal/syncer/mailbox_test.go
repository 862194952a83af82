package syncer

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

func answerCfg(count int, maxBytes int64) MailboxConfig {
	return MailboxConfig{ResultTTL: 5 * time.Minute, AnswerTTL: 24 * time.Hour, MaxResults: count, MaxResultBytes: maxBytes}.withDefaults()
}

func answered(n int) Result {
	return Result{Answered: true, StatusCode: 200, Body: bytes.Repeat([]byte("a"), n)}
}

func TestAnswersBoundedByBytes(t *testing.T) {
	t.Parallel()
	// Room for three 1000-byte answers, not four.
	a := newAnswers(answerCfg(100, 3*(1000+13+answerOverhead)))
	now := time.Now()
	for i := range 4 {
		dropped := putNew(&a, fmt.Sprintf("Q%012d", i), answered(1000), now)
		if i < 3 {
			require.Empty(t, dropped)
		} else {
			require.Equal(t, []string{"Q000000000000"}, dropped, "the oldest unfetched answer goes first, and is reported")
		}
	}
	require.Len(t, a.held, 3)
	require.LessOrEqual(t, a.bytes, a.maxBytes)
	_, ok := a.get("Q000000000000", now)
	require.False(t, ok)
	_, ok = a.get("Q000000000003", now)
	require.True(t, ok)

	// An answer larger than the whole bound is not kept, and pushes out
	// nothing.
	require.Equal(t, []string{"big"}, putNew(&a, "big", answered(int(a.maxBytes)), now))
	require.Len(t, a.held, 3)
}

func TestAnswersBoundedByCount(t *testing.T) {
	t.Parallel()
	a := newAnswers(answerCfg(2, 1<<20))
	now := time.Now()
	putNew(&a, "a", answered(10), now)
	putNew(&a, "b", Result{}, now) // a marker counts too, but is never reported
	a.deliver(a.held["a"], now)
	require.Empty(t, putNew(&a, "c", answered(10), now), "a delivered answer is dropped silently")
	require.Empty(t, putNew(&a, "d", answered(10), now), "a marker is dropped silently")
	require.Len(t, a.held, 2)
	require.Equal(t, []string{"c"}, putNew(&a, "e", answered(10), now))
}

func TestAnswersBytesAccountingOnReplace(t *testing.T) {
	t.Parallel()
	a := newAnswers(answerCfg(10, 1<<20))
	now := time.Now()
	putNew(&a, "a", Result{}, now)
	putNew(&a, "a", answered(500), now)
	putNew(&a, "a", answered(100), now)
	require.Equal(t, int64(100+1+answerOverhead), a.bytes)
	a.expire(now.Add(25 * time.Hour))
	require.Zero(t, a.bytes)
	require.Empty(t, a.held)
	require.Empty(t, a.order, "expired records leave the order too")
}

func TestAnswersLifetimes(t *testing.T) {
	t.Parallel()
	a := newAnswers(answerCfg(10, 1<<20))
	t0 := time.Now()
	putNew(&a, "marker", Result{}, t0)
	putNew(&a, "unfetched", answered(10), t0)
	putNew(&a, "given", answered(10), t0)
	h, _ := a.get("given", t0.Add(time.Hour))
	a.deliver(h, t0.Add(time.Hour))

	at := func(d time.Duration, id string) bool { _, ok := a.get(id, t0.Add(d)); return ok }
	require.True(t, at(5*time.Minute-time.Nanosecond, "marker"))
	require.False(t, at(5*time.Minute, "marker"), "a marker lives ResultTTL")
	require.True(t, at(24*time.Hour-time.Nanosecond, "unfetched"))
	require.False(t, at(24*time.Hour, "unfetched"), "an unfetched answer lives AnswerTTL")
	require.True(t, at(time.Hour+5*time.Minute-time.Nanosecond, "given"))
	require.False(t, at(time.Hour+5*time.Minute, "given"), "a delivered answer lives ResultTTL after delivery")

	// Delivery never lengthens a life.
	putNew(&a, "late", answered(10), t0)
	h, _ = a.get("late", t0.Add(24*time.Hour-time.Minute))
	a.deliver(h, t0.Add(24*time.Hour-time.Minute))
	require.False(t, at(24*time.Hour, "late"))
}

func TestAnswersOrderStaysCompact(t *testing.T) {
	t.Parallel()
	a := newAnswers(answerCfg(10000, 1<<30))
	now := time.Now()
	for i := range 5000 {
		putNew(&a, "same", answered(i%7), now)
	}
	require.Len(t, a.held, 1)
	require.LessOrEqual(t, len(a.order), 2*len(a.held)+16)
}

func TestTakeAnswerOnce(t *testing.T) {
	t.Parallel()
	mb := NewMailbox(MailboxConfig{}, zap.NewNop(), nil)
	b := mb.sending("Q1")
	_, st := mb.Take("Q1")
	require.Equal(t, AnswerPending, st, "being sent")
	mb.publish("Q1", b, Result{State: "queued"})
	_, st = mb.Take("Q1")
	require.Equal(t, AnswerPending, st, "the attempt ended without an answer")
	b = mb.sending("Q1")
	mb.publish("Q1", b, Result{State: "sent", Answered: true, StatusCode: 200, Body: []byte(`{"status":"SUCCESS"}`)})
	r, st := mb.Take("Q1")
	require.Equal(t, AnswerGiven, st)
	require.JSONEq(t, `{"status":"SUCCESS"}`, string(r.Body))
	_, st = mb.Take("Q1")
	require.Equal(t, AnswerAlreadyGiven, st, "exactly once")
	again, ok := mb.Recent("Q1")
	require.True(t, ok, "a replay of the same request still gets it within ResultTTL")
	require.Equal(t, r.Body, again.Body)

	mb.publish("Q2", mb.sending("Q2"), Result{State: "sent", Answered: true, StatusCode: 200, Body: []byte(`{}`)})
	mb.Delivered("Q2")
	_, st = mb.Take("Q2")
	require.Equal(t, AnswerAlreadyGiven, st, "given in the answer to the POS's request")
	_, st = mb.Take("Q3")
	require.Equal(t, AnswerUnknown, st)
}

func TestAnswerToAWaitingRequestIsNotGivenLate(t *testing.T) {
	t.Parallel()
	mb := NewMailbox(MailboxConfig{}, zap.NewNop(), nil)
	mb.mu.Lock()
	ch := make(chan Result, 1)
	mb.a.waiters["Q1"] = []chan Result{ch}
	mb.mu.Unlock()
	mb.publish("Q1", mb.sending("Q1"), Result{State: "sent", Answered: true, StatusCode: 200, Body: []byte(`{}`)})
	require.True(t, (<-ch).Answered)
	_, st := mb.Take("Q1")
	require.Equal(t, AnswerAlreadyGiven, st, "given to the request that waited, before it even wrote it")
}

func TestForgetKeepsWhatCameAfterTheMark(t *testing.T) {
	t.Parallel()
	mb := NewMailbox(MailboxConfig{}, zap.NewNop(), nil)
	rejected := Result{State: "rejected", Answered: true, StatusCode: 400, Body: []byte(`{"status":"ERROR"}`)}
	mb.publish("Q1", mb.sending("Q1"), rejected)
	mb.publish("Q2", mb.sending("Q2"), rejected)
	mark := mb.Mark()
	mb.publish("Q2", mb.sending("Q2"), Result{State: "sent", Answered: true, StatusCode: 200, Body: []byte(`{"status":"SUCCESS"}`)})
	mb.Forget("Q1", mark)
	mb.Forget("Q2", mark)
	_, st := mb.Take("Q1")
	require.Equal(t, AnswerUnknown, st, "published before the mark: stale")
	r, st := mb.Take("Q2")
	require.Equal(t, AnswerGiven, st, "published after the mark: the retry's own answer")
	require.JSONEq(t, `{"status":"SUCCESS"}`, string(r.Body))
	n, size := mb.Held()
	require.Equal(t, 1, n)
	require.Equal(t, int64(len(`{"status":"SUCCESS"}`)+2+answerOverhead), size)
}

// putNew puts r as the answer of a new attempt for id.
func putNew(a *answers, id string, r Result, now time.Time) []string {
	return a.put(id, a.begin(id), r, now)
}

// TestForgetDropsAnAnswerPublishedAfterTheRetry: an attempt commits its
// outcome before it publishes its answer, so an operator's retry can come
// between the two. The refusal that comes after the retry is stale all the
// same: the late-answer route must not give it, while the request that
// waited for that attempt still gets it; the retry's own attempt's answer
// is kept.
func TestForgetDropsAnAnswerPublishedAfterTheRetry(t *testing.T) {
	t.Parallel()
	mb := NewMailbox(MailboxConfig{}, zap.NewNop(), nil)
	rejected := Result{State: "rejected", Answered: true, StatusCode: 400, Body: []byte(`{"status":"ERROR"}`)}
	began := mb.sending("Q1")
	mb.mu.Lock()
	waiter := make(chan Result, 1)
	mb.a.waiters["Q1"] = []chan Result{waiter}
	mb.mu.Unlock()

	mark := mb.Mark() // the retry, after the refusal's commit
	mb.Forget("Q1", mark)
	mb.publish("Q1", began, rejected)
	require.Equal(t, "rejected", string((<-waiter).State), "the request waiting for that attempt gets its answer")
	_, st := mb.Take("Q1")
	require.Equal(t, AnswerUnknown, st, "the refusal before the retry is no answer now")
	n, _ := mb.Held()
	require.Zero(t, n)

	b := mb.sending("Q1")
	_, st = mb.Take("Q1")
	require.Equal(t, AnswerPending, st)
	mb.publish("Q1", b, Result{State: "sent", Answered: true, StatusCode: 200, Body: []byte(`{"status":"SUCCESS"}`)})
	r, st := mb.Take("Q1")
	require.Equal(t, AnswerGiven, st, "the retry's own answer")
	require.JSONEq(t, `{"status":"SUCCESS"}`, string(r.Body))
	mb.mu.Lock()
	defer mb.mu.Unlock()
	require.Empty(t, mb.a.forgot, "the stale attempt's mark goes with its answer")
}

// TestSettledWaitsForTheAnswerAfterItsCommit: a replay that reads an
// outcome committed by an attempt that has not published its answer yet
// gets that answer, where Recent would say none is held (the 409 "no
// longer held" a POS got in that gap); with no attempt in flight it
// answers at once.
func TestSettledWaitsForTheAnswerAfterItsCommit(t *testing.T) {
	t.Parallel()
	mb := NewMailbox(MailboxConfig{}, zap.NewNop(), nil)
	began := mb.sending("Q1") // committed on disk, not yet published
	_, ok := mb.Recent("Q1")
	require.False(t, ok)
	got := make(chan Result, 1)
	go func() {
		r, _ := mb.Settled(t.Context(), "Q1")
		got <- r
	}()
	require.Eventually(t, func() bool {
		mb.mu.Lock()
		defer mb.mu.Unlock()
		return len(mb.a.waiters["Q1"]) == 1
	}, 5*time.Second, time.Millisecond)
	mb.publish("Q1", began, Result{State: "sent", Answered: true, StatusCode: 200, Body: []byte(`{"status":"SUCCESS"}`)})
	require.JSONEq(t, `{"status":"SUCCESS"}`, string((<-got).Body))
	_, st := mb.Take("Q1")
	require.Equal(t, AnswerAlreadyGiven, st, "the replay gave it")

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, ok = mb.Settled(ctx, "Q2")
	require.False(t, ok, "nothing in flight, nothing held: no wait")
	require.NoError(t, ctx.Err())
}
