package queue

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
	"go.etcd.io/bbolt"
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
	// Sending asks that a new receipt be stored already claimed: in state
	// sending, its first attempt begun, for a send slot the caller holds
	// (the accept carries the claim, so no commit of the database comes
	// between the receipt's record and its send). The record is durable
	// before Enqueue returns, even when ctx ends meanwhile, so the caller
	// always knows whether to send it. Only with a log: a replay, a
	// correction, or a receipt too large for a log record is stored (or
	// returned) as without it, so the caller sends only an entry returned
	// new in state sending, and gives its slot back otherwise.
	Sending bool
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

// putIdem writes key's idempotency row: seq and the body hash, and notes
// the key in the queue's filter, before the commit that writes it.
func (b bkts) putIdem(key string, seq uint64, hash string) error {
	if b.keys == nil {
		return fmt.Errorf("idempotency row for %q written outside Queue.update: the key filter would miss it", key)
	}
	b.keys.add(key)
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

// lockLog takes walMu to decide on and append a record of the log, once
// the store takes writes and the queue is open; on nil the caller
// unlocks it.
func (q *Queue) lockLog() error {
	if err := q.st.Writable(); err != nil {
		return err
	}
	q.walMu.Lock()
	if q.closed {
		q.walMu.Unlock()
		return fmt.Errorf("%w: the queue is closed", store.ErrClosed)
	}
	return nil
}

// enqueueLogged is Enqueue with a log: the decision under walMu from the
// overlay and the file, a new receipt appended to the log, and the wait
// for its flush outside walMu, shared with every enqueue of the moment.
func (q *Queue) enqueueLogged(ctx context.Context, r NewReceipt, now time.Time) (Entry, bool, error) {
	if err := q.lockLog(); err != nil {
		return Entry{}, false, err
	}
	replay, lsn, first, err := decideKeys(r, func(key string) (*Entry, uint64, bool, error) {
		return q.lookupKey(key, r.BodyHash)
	})
	switch {
	case err != nil:
		q.walMu.Unlock()
		return Entry{}, false, err
	case replay != nil:
		q.walMu.Unlock()
		if err := q.log.Sync(ctx, lsn); err != nil { // a replay is durable before it is answered
			return Entry{}, false, q.logError(err)
		}
		return *replay, true, nil
	case first != nil: // a correction rewrites the first entry: through the file
		q.walMu.Unlock()
		return q.enqueueExclusive(ctx, r, now)
	}
	seq := q.nextSeq
	e := newReceiptEntry(seq, r, now)
	if r.Sending {
		e.State = StateSending
	}
	rec, err := encodeTo([]byte{recEnqueue}, &e)
	if err == nil {
		// The record ends with the body: the entry keeps that copy (the
		// caller's may be reused), one allocation a receipt instead of two.
		e.Body = rec[len(rec)-len(r.Body):]
		lsn, err = q.log.Append(rec)
	}
	if errors.Is(err, wal.ErrTooLarge) {
		q.walMu.Unlock()
		return q.enqueueExclusive(ctx, r, now)
	}
	if err != nil {
		q.walMu.Unlock()
		return Entry{}, false, q.logError(err)
	}
	q.nextSeq++
	q.lastLSN = lsn
	waiting := q.ov.add(&logRec{lsn: lsn, seq: seq, e: e, enc: rec[1:]})
	q.walMu.Unlock()
	syncCtx := ctx
	if r.Sending {
		// A claimed record abandoned by a cancelled wait could still
		// become durable, in sending, with no send to finish it.
		syncCtx = context.WithoutCancel(ctx)
	}
	if err := q.log.Sync(syncCtx, lsn); err != nil {
		return Entry{}, false, q.logError(err)
	}
	q.wakeApply(waiting)
	if !r.Sending { // a claimed receipt is the caller's to send, nothing for the worker to claim
		q.signal()
	}
	return e, false, nil
}

// lookupKey is the keyLookup of an enqueue with a log: the overlay first,
// then the file (the order that cannot miss a record being applied).
func (q *Queue) lookupKey(key, hash string) (e *Entry, lsn uint64, same bool, err error) {
	if r := q.ov.key(key); r != nil {
		e := r.e
		return &e, r.lsn, r.e.BodyHash == hash, nil
	}
	if !q.keys.mayHave(key) {
		return nil, 0, false, nil // most keys are new: no read of the file
	}
	err = q.st.View(func(tx *bbolt.Tx) error {
		e, same, err = idemEntry(buckets(tx), key, hash)
		return err
	})
	return e, 0, same, err
}

// enqueueExclusive is Enqueue through a write transaction: a correction,
// or a record too large for a log segment.
func (q *Queue) enqueueExclusive(ctx context.Context, r NewReceipt, now time.Time) (Entry, bool, error) {
	var (
		e        Entry
		replayed bool
	)
	err := q.exclusive(ctx, func(b bkts) (err error) {
		e, replayed, err = enqueueTx(b, r, now)
		return err
	})
	if err != nil {
		return Entry{}, false, err
	}
	if !replayed {
		q.signal()
	}
	return e, replayed, nil
}
