package queue

import (
	"context"
	"fmt"
	"time"
)

// Finishing says how an attempt on an entry in sending ended, for Finish
// and FinishAndClaim.
type Finishing struct {
	QueueID string
	Attempt Attempt // appended to the entry's attempts
	// Next is the entry's new state: sent, payment, rejected, held or
	// queued (a retry) for receipts; deleted, delete_rejected or
	// delete_queued for deletes.
	Next State
	// Outcome, when not nil, replaces the kept outcome.
	Outcome *Outcome
	// NextAttemptAt is when a queued or delete_queued entry may be claimed
	// again; zero: at once.
	NextAttemptAt time.Time
}

// Finish records the end of an attempt on an entry in sending and moves it
// to f.Next.
func (q *Queue) Finish(ctx context.Context, f Finishing) (Entry, error) {
	e, _, err := q.FinishAndClaim(ctx, f, 0, time.Time{})
	return e, err
}

// FinishAndClaim is Finish followed, in the same commit, by Claim(max,
// now): a sender that goes straight on to the next entry pays one commit
// per entry instead of two. With max 0 nothing is claimed.
func (q *Queue) FinishAndClaim(ctx context.Context, f Finishing, max int, now time.Time) (Entry, []Entry, error) {
	var (
		e         Entry
		claimed   []Entry
		wakeCheck bool
	)
	err := q.update(ctx, func(b bkts) (err error) {
		if e, wakeCheck, err = q.finishTx(b, f); err != nil {
			return err
		}
		claimed = nil
		if max > 0 {
			claimed, err = q.claimTx(b, max, now)
		}
		return err
	})
	if err != nil {
		return Entry{}, nil, fmt.Errorf("finish %s: %w", f.QueueID, err)
	}
	if wakeCheck && e.State != StateQueued {
		q.signal() // a delete waiting for this receipt may be claimable now
	}
	return e, claimed, nil
}

// finishTx is Finish inside a write transaction. wakeCheck reports that a
// delete may be waiting for this receipt.
func (q *Queue) finishTx(b bkts, f Finishing) (e Entry, wakeCheck bool, err error) {
	queueID, next := f.QueueID, f.Next
	var seq uint64
	if e, seq, err = b.loadID(queueID); err != nil {
		return Entry{}, false, err
	}
	if e.State != StateSending {
		return Entry{}, false, illegal(&e, next)
	}
	q.addAttempt(&e, f.Attempt)
	if f.Outcome != nil {
		oc := *f.Outcome
		e.Outcome = &oc
	}
	e.NextAttemptAt = f.NextAttemptAt.UTC()
	if err := b.setState(&e, next, q.now().UTC()); err != nil {
		return Entry{}, false, err
	}
	if e.Kind == KindReceipt && (next == StateSent || next == StatePayment) && e.Outcome != nil && e.Outcome.ID != "" {
		if err := b.upstream.Put([]byte(e.Outcome.ID), seqKey(seq)); err != nil {
			return Entry{}, false, err
		}
	}
	return e, e.Kind == KindReceipt && b.deletes.Get([]byte(queueID)) != nil, nil
}

func (q *Queue) addAttempt(e *Entry, a Attempt) {
	a.At = a.At.UTC()
	if a.Result == ResultAmbiguous {
		e.Ambiguous++
	}
	e.Attempts = append(e.Attempts, a)
	if over := len(e.Attempts) - q.maxAttempts; over > 0 {
		// Keep the first attempt and the latest ones.
		e.Attempts = append(e.Attempts[:1], e.Attempts[1+over:]...)
		e.AttemptsDropped += over
	}
}
