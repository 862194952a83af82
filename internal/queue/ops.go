package queue

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// NewReceipt is a validated POS request to enqueue.
type NewReceipt struct {
	IdemKey  string // required: Idempotency-Key or the derived key
	Body     []byte // required: the request bytes as the POS sent them (valid JSON)
	BodyHash string // required: fingerprint of the body, for conflict detection
	// MerchantTin, PosNo and BillIDSuffix are kept for listing and audit.
	MerchantTin, PosNo, BillIDSuffix string
	Now                              time.Time // acceptance time; zero means the queue's clock
	// EarlierKey, when set, is a second key under which an earlier
	// acceptance of the same body counts as this request if it was
	// accepted at or after EarlierSince: the previous day's derived key,
	// for a retry that crosses midnight (or the next day's, for a retry
	// whose clock was put back across midnight). Another body under
	// EarlierKey is no conflict (a new day may reuse a billIdSuffix).
	EarlierKey   string
	EarlierSince time.Time
	// BodyParsed says the caller has already parsed Body as JSON (the API
	// runs receipt.ParseCreate on every create); Enqueue then does not
	// check it again. False: Enqueue refuses a body that is not JSON.
	BodyParsed bool
}

// Enqueue stores a receipt durably and returns its entry. The same IdemKey
// with the same BodyHash returns the first entry with replayed true; with
// another hash it is a *ConflictError (ErrConflict), unless the first entry never became a
// sale: rejected or cancelled with no ambiguous attempt. Then the new body
// is a correction and takes the key; a rejected first entry becomes
// cancelled, naming its replacement. On any error nothing is stored.
func (q *Queue) Enqueue(ctx context.Context, r NewReceipt) (Entry, bool, error) {
	if r.IdemKey == "" || r.BodyHash == "" || len(r.Body) == 0 || !r.BodyParsed && !json.Valid(r.Body) {
		return Entry{}, false, fmt.Errorf("enqueue: %w: key, hash and a JSON body are required", ErrInvalid)
	}
	now := r.Now
	if now.IsZero() {
		now = q.now()
	}
	if q.log != nil {
		e, replayed, err := q.enqueueLogged(ctx, r, now.UTC())
		if err != nil {
			return Entry{}, false, fmt.Errorf("enqueue %s: %w", r.IdemKey, err)
		}
		return e, replayed, nil
	}
	var (
		e        Entry
		replayed bool
	)
	err := q.update(ctx, func(b bkts) (err error) {
		e, replayed, err = enqueueTx(b, r, now.UTC())
		return err
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("enqueue %s: %w", r.IdemKey, err)
	}
	if !replayed {
		q.signal()
	}
	return e, replayed, nil
}

func enqueueTx(b bkts, r NewReceipt, now time.Time) (Entry, bool, error) {
	replay, _, first, err := decideKeys(r, func(key string) (*Entry, uint64, bool, error) {
		e, same, err := idemEntry(b, key, r.BodyHash)
		return e, 0, same, err
	})
	switch {
	case err != nil:
		return Entry{}, false, err
	case replay != nil:
		return *replay, true, nil
	}
	seq, err := b.entries.NextSequence()
	if err != nil {
		return Entry{}, false, err
	}
	e := newReceiptEntry(seq, r, now)
	e.Body = bytes.Clone(r.Body)
	if first != nil && first.State == StateRejected {
		msg := "superseded by " + e.QueueID + ", a corrected receipt under the same idempotency key"
		if first.Outcome != nil && first.Outcome.Message != "" {
			msg += "; the tax service had said: " + first.Outcome.Message
		}
		first.Outcome = withMessage(first.Outcome, msg)
		if err := b.setState(first, StateCancelled, now); err != nil {
			return Entry{}, false, err
		}
	}
	if err := b.appendQueued(seq, &e); err != nil {
		return Entry{}, false, err
	}
	return e, false, b.putIdem(r.IdemKey, seq, r.BodyHash)
}

// newReceiptEntry is the entry of a new receipt r with queueId seq; its
// Body is r.Body itself, for the caller to copy or not.
func newReceiptEntry(seq uint64, r NewReceipt, now time.Time) Entry {
	return Entry{QueueID: FormatID(seq), Kind: KindReceipt, State: StateQueued,
		AcceptedAt: now, UpdatedAt: now, Body: r.Body,
		IdemKey: r.IdemKey, BodyHash: r.BodyHash, MerchantTin: r.MerchantTin,
		PosNo: r.PosNo, BillIDSuffix: r.BillIDSuffix, Attempts: []Attempt{}}
}

// keyLookup finds the entry an idempotency key points to, if any, whether
// its body hash is the request's, and the LSN of its write-ahead log
// record when it is not yet in the file (0 otherwise).
type keyLookup func(key string) (e *Entry, lsn uint64, same bool, err error)

// decideKeys is Enqueue's idempotency decision: an earlier entry to replay
// (with its record's LSN, to wait for), a *ConflictError, or a new entry,
// which replaces first when first is a correctable entry under the same
// key (nil: the key is free).
func decideKeys(r NewReceipt, lookup keyLookup) (replay *Entry, lsn uint64, first *Entry, err error) {
	first, lsn, same, err := lookup(r.IdemKey)
	switch {
	case err != nil:
		return nil, 0, nil, err
	case first != nil && same:
		return first, lsn, nil, nil
	}
	if r.EarlierKey != "" {
		// Checked before today's key may conflict or take a correction: a
		// retry of yesterday's last sale is that sale, whatever today's
		// key holds. No row of today's key is written for it: today's key
		// stays free for today's own sale of that billIdSuffix.
		prev, plsn, same, err := lookup(r.EarlierKey)
		if err != nil {
			return nil, 0, nil, err
		}
		if prev != nil && same && !prev.AcceptedAt.Before(r.EarlierSince) {
			return prev, plsn, nil, nil
		}
	}
	if first != nil && !correctable(first) {
		return nil, 0, nil, &ConflictError{First: first.QueueID, State: first.State}
	}
	return nil, 0, first, nil
}

// correctable reports whether an entry that holds an idempotency key never
// became a sale, so a different body under its key may replace it: a
// receipt rejected or cancelled, with no attempt that was accepted or whose
// answer was lost, and its whole attempt history kept.
func correctable(e *Entry) bool {
	if e.Kind != KindReceipt || (e.State != StateRejected && e.State != StateCancelled) ||
		e.Ambiguous > 0 || e.AttemptsDropped > 0 {
		return false
	}
	for _, a := range e.Attempts {
		if a.Result == ResultSuccess || a.Result == ResultPayment {
			return false // issued once (then retried by an operator)
		}
	}
	return true
}

// putIdem writes key's idempotency row: seq and the body hash.
func (b bkts) putIdem(key string, seq uint64, hash string) error {
	return b.idem.Put([]byte(key), append(seqKey(seq), hash...))
}

// idemEntry returns the entry key points to, if any, and whether its body
// hash is hash (the row putIdem wrote).
func idemEntry(b bkts, key, hash string) (*Entry, bool, error) {
	v := b.idem.Get([]byte(key))
	if v == nil {
		return nil, false, nil
	}
	if len(v) < 8 {
		return nil, false, fmt.Errorf("idempotency index row for %q is damaged", key)
	}
	e, err := b.load(binary.BigEndian.Uint64(v))
	if err != nil {
		return nil, false, err
	}
	return &e, string(v[8:]) == hash, nil
}

// Claim moves up to max claimable entries, oldest first, to sending in one
// commit and returns them; fewer than max only when fewer are claimable.
// Claimable: queued receipts and delete_queued deletes whose NextAttemptAt
// is not after now; a delete only once its receipt has finished as sent or
// payment. A delete whose receipt ended rejected or cancelled is finished
// as delete_rejected here, never sent. The claim also indexes the oldest
// max(max, 1000) receipts of the unindexed tail (layout.go).
func (q *Queue) Claim(ctx context.Context, max int, now time.Time) ([]Entry, error) {
	if max <= 0 {
		return nil, nil
	}
	if idle, err := q.nothingToClaim(max, now); err != nil || idle {
		return nil, err
	}
	var out []Entry
	err := q.update(ctx, func(b bkts) (err error) {
		out, err = claimTx(b, max, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return out, nil
}

// nothingToClaim reports, from a read transaction, that a claim at now
// would change nothing: no unindexed tail, and no due pending row to send
// or to finish as delete_rejected. A commit writes and fsyncs the meta
// page even when it changes nothing, so without this check the worker's
// poll of an idle queue cost a disk write every second. Something that
// becomes claimable after the check signals Notify, so the worker claims
// again.
func (q *Queue) nothingToClaim(max int, now time.Time) (bool, error) {
	var idle bool
	err := q.view(func(b bkts, pend []*logRec) error {
		lo, hi, err := b.tail()
		if err != nil || lo <= hi || len(pend) > 0 {
			return err
		}
		picked, err := pickClaimable(b, max, now)
		idle = len(picked) == 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("claim: %w", err)
	}
	return idle, nil
}

// claimTx is Claim inside a write transaction.
func claimTx(b bkts, limit int, now time.Time) ([]Entry, error) {
	// Tail entries are all claimable and newer than every indexed one, so
	// indexing limit of them is enough to claim limit, oldest first.
	if err := b.indexTail(max(tailIndexBatch, limit)); err != nil {
		return nil, err
	}
	var out []Entry
	picked, err := pickClaimable(b, limit, now)
	if err != nil {
		return nil, err
	}
	for _, p := range picked {
		to := StateSending
		if p.reject != "" {
			to = StateDeleteRejected
			p.e.Outcome = &Outcome{Status: "ERROR", Message: p.reject}
		}
		if err := b.setState(&p.e, to, now.UTC()); err != nil {
			return nil, err
		}
		if to == StateSending {
			out = append(out, p.e)
		}
	}
	return out, nil
}

type pick struct {
	e      Entry
	reject string // non-empty: finish this delete as delete_rejected
}

// pickClaimable walks the pending index; it only reads, so the cursor stays valid.
// Deletes to finish as delete_rejected do not count toward max, so a claim
// returns fewer than max only when fewer are claimable.
func pickClaimable(b bkts, max int, now time.Time) ([]pick, error) {
	var out []pick
	sends := 0
	c := b.pending.Cursor()
	for k, v := c.First(); k != nil && sends < max; k, v = c.Next() {
		if !due(v, now) {
			continue
		}
		e, err := b.load(binary.BigEndian.Uint64(k))
		if err != nil {
			return nil, err
		}
		if e.Kind == KindDelete {
			ready, reject, err := deleteReady(b, &e)
			if err != nil {
				return nil, err
			}
			if !ready && reject == "" {
				continue
			}
			out = append(out, pick{e: e, reject: reject})
			if reject == "" {
				sends++
			}
			continue
		}
		out = append(out, pick{e: e})
		sends++
	}
	return out, nil
}

// deleteReady decides whether a delete may be sent now, filling its id,
// date and body from its receipt's outcome.
func deleteReady(b bkts, d *Entry) (ready bool, reject string, err error) {
	if d.DeleteTarget != "" {
		t, _, err := b.loadID(d.DeleteTarget)
		switch {
		case errors.Is(err, ErrNotFound): // pruned: the id was filled when it finished
		case err != nil:
			return false, "", err
		case (t.State == StateRejected || t.State == StateCancelled) && t.Ambiguous > 0:
			return false, fmt.Sprintf("receipt %s ended %s, but an earlier attempt's answer was lost, so it may exist upstream; "+
				"receiptd has no upstream id to delete it with: check with the tax service", t.QueueID, t.State), nil
		case t.State == StateRejected || t.State == StateCancelled:
			return false, fmt.Sprintf("receipt %s ended %s; there is nothing to delete upstream", t.QueueID, t.State), nil
		case t.State != StateSent && t.State != StatePayment:
			return false, "", nil // the create is not finished yet
		case t.Outcome != nil:
			if d.DeleteID == "" {
				d.DeleteID = t.Outcome.ID
			}
			if d.DeleteDate == "" {
				d.DeleteDate = t.Outcome.Date
			}
		}
	}
	if d.DeleteID == "" {
		return false, "the receipt has no upstream id to delete", nil
	}
	d.Body = deleteBody(d.DeleteID, d.DeleteDate)
	return true, "", nil
}

// deleteBody is the delete request sent upstream. date is optional in the
// interface (2.6): when receiptd knows none, the field is left out rather
// than sent as an empty Datetime.
func deleteBody(id, date string) json.RawMessage {
	b, _ := json.Marshal(struct {
		ID   string `json:"id"`
		Date string `json:"date,omitempty"`
	}{id, date})
	return b
}

// Finish records the end of an attempt on an entry in sending and moves it
// to next: sent, payment, rejected, held or queued (retry at nextAttemptAt)
// for receipts; deleted, delete_rejected or delete_queued for deletes. o,
// when not nil, replaces the kept outcome.
func (q *Queue) Finish(ctx context.Context, queueID string, a Attempt, next State, o *Outcome, nextAttemptAt time.Time) (Entry, error) {
	e, _, err := q.FinishAndClaim(ctx, queueID, a, next, o, nextAttemptAt, 0, time.Time{})
	return e, err
}

// FinishAndClaim is Finish followed, in the same commit, by Claim(max,
// now): a sender that goes straight on to the next entry pays one commit
// per entry instead of two. With max 0 nothing is claimed.
func (q *Queue) FinishAndClaim(ctx context.Context, queueID string, a Attempt, next State, o *Outcome, nextAttemptAt time.Time, max int, now time.Time) (Entry, []Entry, error) {
	var (
		e         Entry
		claimed   []Entry
		wakeCheck bool
	)
	err := q.update(ctx, func(b bkts) (err error) {
		if e, wakeCheck, err = q.finishTx(b, queueID, a, next, o, nextAttemptAt); err != nil {
			return err
		}
		claimed = nil
		if max > 0 {
			claimed, err = claimTx(b, max, now)
		}
		return err
	})
	if err != nil {
		return Entry{}, nil, fmt.Errorf("finish %s: %w", queueID, err)
	}
	if wakeCheck && e.State != StateQueued {
		q.signal() // a delete waiting for this receipt may be claimable now
	}
	return e, claimed, nil
}

// finishTx is Finish inside a write transaction. wakeCheck reports that a
// delete may be waiting for this receipt.
func (q *Queue) finishTx(b bkts, queueID string, a Attempt, next State, o *Outcome, nextAttemptAt time.Time) (e Entry, wakeCheck bool, err error) {
	var seq uint64
	if e, seq, err = b.loadID(queueID); err != nil {
		return Entry{}, false, err
	}
	if e.State != StateSending {
		return Entry{}, false, illegal(&e, next)
	}
	q.addAttempt(&e, a)
	if o != nil {
		oc := *o
		e.Outcome = &oc
	}
	e.NextAttemptAt = nextAttemptAt.UTC()
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

// Retry is the operator's retry: rejected, payment or held → queued, and
// delete_rejected → delete_queued, claimable at once. A held entry may have
// reached the tax service already (its answer was lost, or it was restored
// from a backup), so it is retried only with checked true, the operator's
// word that the tax service has been asked; otherwise ErrUnchecked. The
// retry is recorded in the entry's attempts with the earlier outcome's
// upstream id, so a payment entry's first receipt id stays in its history
// once the new attempt replaces the outcome. Anything else is
// ErrIllegalTransition.
func (q *Queue) Retry(ctx context.Context, queueID string, checked bool) (Entry, error) {
	var e Entry
	err := q.update(ctx, func(b bkts) error {
		var err error
		if e, _, err = b.loadID(queueID); err != nil {
			return err
		}
		var to State
		switch e.State {
		case StateHeld:
			if !checked {
				return fmt.Errorf("%w: %s", ErrUnchecked, queueID)
			}
			to = StateQueued
		case StateRejected, StatePayment:
			to = StateQueued
		case StateDeleteRejected:
			to = StateDeleteQueued
		default:
			return illegal(&e, StateQueued)
		}
		now := q.now().UTC()
		q.addAttempt(&e, retryRecord(e, now))
		e.NextAttemptAt = time.Time{}
		return b.setState(&e, to, now)
	})
	if err != nil {
		return Entry{}, fmt.Errorf("retry %s: %w", queueID, err)
	}
	q.signal()
	return e, nil
}

// retryRecord is the history line of an operator's retry.
func retryRecord(e Entry, now time.Time) Attempt {
	a := Attempt{At: now, Result: ResultOperatorRetry, Error: "put back in the queue by an operator from " + string(e.State)}
	if o := e.Outcome; o != nil {
		a.UpstreamID = o.ID
		if o.ID != "" {
			a.Error += "; the earlier answer was " + o.Status + " with upstream id " + o.ID
			if o.Date != "" {
				a.Error += " of " + o.Date
			}
		}
	}
	return a
}
