package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/wal"
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
	// Recorded, when not nil, is called once the outcome is recorded and
	// before anything is claimed: the worker hands the answer to the
	// waiting request there, so that the claim's commit is not on its
	// path. A commit's outcome is durable then. A log record's is in the
	// log's file, where it outlives a kill of receiptd, and its fdatasync
	// follows while the answer is written (wal.Log.SyncWithin): a power cut
	// in that moment (at most OutcomeFlushGrace and a flush) is a power
	// cut while the tax service answers, the attempt ambiguous
	// (docs/decisions/durability.md). FinishAndClaim returns only once the
	// outcome is durable.
	Recorded func()
	// Awaited says a request waits for this attempt's answer: with a log
	// the outcome is then a record of the log, and the claim a commit of
	// its own after Recorded. Otherwise (a backlog drained, nobody
	// waiting) the outcome and the claim share one commit, as without a
	// log.
	Awaited bool
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
//
// With a log and f.Awaited the outcome is a record of the log (finishLogged): durable
// with one fdatasync, shared with the receipts and outcomes of the
// moment, and applied to the file with the next write; the claim is then
// a commit of its own, whose failure leaves the outcome recorded (the
// claim is not returned, and the worker's drain loop claims again).
func (q *Queue) FinishAndClaim(ctx context.Context, f Finishing, max int, now time.Time) (Entry, []Entry, error) {
	if q.log != nil && f.Awaited {
		e, logged, err := q.finishLogged(ctx, f)
		if err != nil {
			return Entry{}, nil, wrapFinish(f, err)
		}
		if logged {
			if max == 0 {
				return e, nil, nil
			}
			claimed, err := q.Claim(ctx, max, now)
			if err != nil {
				return e, nil, nil
			}
			return e, claimed, nil
		}
	}
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
		return Entry{}, nil, wrapFinish(f, err)
	}
	if f.Recorded != nil {
		f.Recorded()
	}
	if wakeCheck && e.State != StateQueued {
		q.signal() // a delete waiting for this receipt may be claimable now
	}
	return e, claimed, nil
}

// OutcomeFlushGrace is how long an outcome record written to the log's
// file may wait for the next flush of a receipt's record to make it
// durable with that receipt, one fdatasync for both, before it is
// flushed alone (wal.Log.SyncWithin). Its answer is handed over once it
// is written, so the grace is on nobody's path; it spares the next sale,
// when it comes at once (a busy till), a flush of the disk beside its
// own. It lengthens by at most this much the moment in which a power cut
// makes the attempt ambiguous, which begins when the request leaves and
// lasts the tax service's answer: tens of milliseconds or more.
const OutcomeFlushGrace = 2 * time.Millisecond

// finishLogged records the end of an attempt as a record of the log: the
// entry as finishTx would leave it, from its newest version (the log's or
// the file's), durable before it returns even when ctx ends meanwhile
// (an outcome abandoned in the log would be applied later all the same).
// It calls f.Recorded once the record is in the log's file.
// logged false: the record is too large for a log segment, nothing was
// written, and the caller commits the outcome to the file instead.
func (q *Queue) finishLogged(ctx context.Context, f Finishing) (e Entry, logged bool, err error) {
	e, lsn, waiting, logged, err := q.appendFinish(f)
	if err != nil || !logged {
		return Entry{}, false, err
	}
	if err := q.log.SyncWithin(context.WithoutCancel(ctx), lsn, OutcomeFlushGrace, f.Recorded); err != nil {
		return Entry{}, false, q.logError(err)
	}
	q.wakeApply(waiting)
	return e, true, nil
}

// wakeApply wakes ApplyLoop for the first record of a batch and for
// applySoon records (waiting: how many the overlay holds): only those wake
// it; between them it looks at the log once an ApplyDelay.
func (q *Queue) wakeApply(waiting int) {
	if waiting == 1 || waiting >= applySoon {
		select {
		case q.applyCh <- struct{}{}:
		default:
		}
	}
}

// FinishWrite is FinishAndClaim for an awaited outcome (f.Awaited) in
// two halves: it returns once the outcome's record is in the log's file
// (f.Recorded called), before its flush, and durable, called once and on
// any goroutine, waits for that flush (as FinishAndClaim does, at most
// OutcomeFlushGrace and a flush) and then claims up to max. A request
// waiting for the answer is answered from the goroutine that sent it, and
// the flush and the claim are left to another. ok false: the outcome
// cannot be a record of the log (no log, or too large for a segment);
// nothing is written, and the caller uses FinishAndClaim.
func (q *Queue) FinishWrite(ctx context.Context, f Finishing) (durable func(ctx context.Context, max int, now time.Time) ([]Entry, error), ok bool, err error) {
	if q.log == nil {
		return nil, false, nil
	}
	_, lsn, waiting, logged, err := q.appendFinish(f)
	if err != nil || !logged {
		return nil, false, wrapFinish(f, err)
	}
	if err := q.log.Write(context.WithoutCancel(ctx), lsn); err != nil {
		return nil, false, wrapFinish(f, q.logError(err))
	}
	if f.Recorded != nil {
		f.Recorded()
	}
	return func(ctx context.Context, max int, now time.Time) ([]Entry, error) {
		if err := q.log.SyncWithin(context.WithoutCancel(ctx), lsn, OutcomeFlushGrace, nil); err != nil {
			return nil, wrapFinish(f, q.logError(err))
		}
		q.wakeApply(waiting)
		if max == 0 {
			return nil, nil
		}
		claimed, err := q.Claim(ctx, max, now)
		if err != nil {
			return nil, nil // as FinishAndClaim: the outcome is durable; the drain loop claims later
		}
		return claimed, nil
	}, true, nil
}

// wrapFinish names the entry in a finish's error; nil stays nil.
func wrapFinish(f Finishing, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("finish %s: %w", f.QueueID, err)
}

// appendFinish appends f's outcome record to the log (not yet written to
// its file) and adds it to the overlay; waiting is how many records the
// overlay holds then. logged false: too large for a log segment, nothing
// appended.
func (q *Queue) appendFinish(f Finishing) (e Entry, lsn uint64, waiting int, logged bool, err error) {
	seq, ok := ParseID(f.QueueID)
	if !ok {
		return Entry{}, 0, 0, false, fmt.Errorf("%w: %q", ErrNotFound, f.QueueID)
	}
	if err := q.lockLog(); err != nil {
		return Entry{}, 0, 0, false, err
	}
	if r := q.ov.entry(seq); r != nil {
		e = r.e
	} else if err := q.st.View(func(tx *bbolt.Tx) (err error) { e, err = buckets(tx).load(seq); return err }); err != nil {
		q.walMu.Unlock()
		return Entry{}, 0, 0, false, err
	}
	if e.State != StateSending || !Legal(e.Kind, StateSending, f.Next) {
		q.walMu.Unlock()
		return Entry{}, 0, 0, false, illegal(&e, f.Next)
	}
	e.Attempts = slices.Clone(e.Attempts) // the overlay's copy stays as it was
	q.addAttempt(&e, f.Attempt)
	if f.Outcome != nil {
		oc := *f.Outcome
		e.Outcome = &oc
	}
	e.NextAttemptAt = time.Time{}
	if claimable(f.Next) {
		e.NextAttemptAt = f.NextAttemptAt.UTC()
	}
	e.State, e.UpdatedAt = f.Next, q.now().UTC()
	rec, err := encodeTo([]byte{recFinish}, &e)
	if err == nil {
		lsn, err = q.log.Append(rec)
	}
	if errors.Is(err, wal.ErrTooLarge) {
		q.walMu.Unlock()
		return Entry{}, 0, 0, false, nil
	}
	if err != nil {
		q.walMu.Unlock()
		return Entry{}, 0, 0, false, q.logError(err)
	}
	q.lastLSN = lsn
	waiting = q.ov.add(&logRec{lsn: lsn, seq: seq, e: e, enc: rec[1:], fin: true})
	q.walMu.Unlock()
	return e, lsn, waiting, true, nil
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
	if err := b.putUpstream(seq, &e); err != nil {
		return Entry{}, false, err
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
