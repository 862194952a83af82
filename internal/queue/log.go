package queue

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

// # The write-ahead log
//
// With Options.LogDir, an enqueue of a new receipt is one record in the
// write-ahead log (package wal): durable with one fdatasync, shared by
// every enqueue of the same moment, and the bbolt file is not written on
// the POS's path. The records are applied to the bbolt file later, in
// batches: by ApplyLoop, and at the start of every other write
// transaction of the queue (a claim, a finish, a delete request), so every
// transaction sees every durable receipt. Applying a record writes what
// Enqueue wrote without a log: the entry (in the unindexed tail) and its
// idempotency row, and moves the applied mark (keyLogApplied) in the same
// transaction; so replaying a record twice is impossible, and Open
// replays exactly the records after the mark. Once applied and committed,
// a record leaves memory, and its segment is trimmed.
//
// Until then the record is in the overlay, which every read consults
// (view): idempotency (a replay of a receipt not yet applied), Get, List,
// Latest, Counts, OldestUnsent and ClaimableAhead; a backup applies
// everything first (ApplyAll). A record leaves the overlay only after the
// commit that applied it, so a reader that looks at the overlay first and
// at the database second cannot miss it.
//
// queueIds stay one sequence: Enqueue takes the next one under walMu,
// and whatever takes a queueId inside a bbolt transaction (a delete
// request, a corrected receipt) runs exclusive: under walMu, with every
// record durable and applied first, so the sequence in the file is the
// one in memory.

var (
	keyLogID      = []byte("logId")      // the log's id: segments of another are refused
	keyLogApplied = []byte("logApplied") // LSN of the newest record applied
	keyLogClean   = []byte("logClean")   // present while every record is applied and the log closed
)

// recEnqueue is the type byte of an enqueue record: the entry as encode
// writes it follows.
const recEnqueue = 1

// applyBatch bounds the records one transaction applies.
const applyBatch = 4096

// applyDelay is how long ApplyLoop lets records gather before it applies
// them, so that a busy till makes one commit for many receipts.
var applyDelay = 50 * time.Millisecond

// logRec is a record not yet applied: the entry, and its encoding as it
// goes into the entries bucket.
type logRec struct {
	lsn, seq uint64
	e        Entry
	enc      []byte
}

// overlay holds the records appended and not yet applied and committed,
// oldest first. LSNs and seqs both rise by one from record to record.
type overlay struct {
	mu    sync.RWMutex
	recs  []*logRec
	byKey map[string]*logRec
}

func (o *overlay) add(r *logRec) {
	o.mu.Lock()
	o.recs = append(o.recs, r)
	o.byKey[r.e.IdemKey] = r
	o.mu.Unlock()
}

// key returns the record holding an idempotency key, if any.
func (o *overlay) key(k string) *logRec {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.byKey[k]
}

// after returns up to limit records after LSN mark, up to durable.
func (o *overlay) after(mark, durable uint64, limit int) []*logRec {
	o.mu.RLock()
	defer o.mu.RUnlock()
	var out []*logRec
	for _, r := range o.recs {
		if r.lsn > durable || len(out) == limit {
			break
		}
		if r.lsn > mark {
			out = append(out, r)
		}
	}
	return out
}

// upTo counts the records up to durable.
func (o *overlay) upTo(durable uint64) int {
	o.mu.RLock()
	defer o.mu.RUnlock()
	n := 0
	for n < len(o.recs) && o.recs[n].lsn <= durable {
		n++
	}
	return n
}

// snapshot returns the records up to durable.
func (o *overlay) snapshot(durable uint64) []*logRec { return o.after(0, durable, -1) }

// drop forgets the records up to LSN applied.
func (o *overlay) drop(applied uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for n < len(o.recs) && o.recs[n].lsn <= applied {
		delete(o.byKey, o.recs[n].e.IdemKey)
		o.recs[n] = nil
		n++
	}
	o.recs = o.recs[n:]
	if len(o.recs) == 0 {
		o.recs = nil // let the array go
	}
}

func (o *overlay) len() int {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return len(o.recs)
}

// openLog opens the write-ahead log in dir, checks it belongs to this
// database, and applies what the database has not; it returns how many
// records that was. On error the log is closed.
func (q *Queue) openLog(ctx context.Context, dir string, segSize int64) (replayed int, err error) {
	var id, mark uint64
	var clean, known bool
	err = q.st.Update(ctx, func(tx *bbolt.Tx) error {
		root := tx.Bucket(store.BucketQueue)
		v := root.Get(keyLogID)
		known = len(v) == 8
		if !known {
			v = newLogID()
			if err := root.Put(keyLogID, v); err != nil {
				return err
			}
		}
		id = binary.BigEndian.Uint64(v)
		if m := root.Get(keyLogApplied); len(m) == 8 {
			mark = binary.BigEndian.Uint64(m)
		}
		clean = root.Get(keyLogClean) != nil
		if !known { // a new log has no records outstanding until it is open
			return root.Put(keyLogClean, []byte{1})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("open write-ahead log %s: %w", dir, err)
	}
	if known && !clean {
		if err := logPresent(dir, mark); err != nil {
			return 0, err
		}
	}
	l, recs, err := wal.Open(dir, id, mark, wal.Options{SegmentSize: segSize})
	if err != nil {
		return 0, fmt.Errorf("open write-ahead log: %w", err)
	}
	q.log = l
	defer func() {
		if err != nil {
			_ = l.Close()
		}
	}()
	err = q.st.Update(ctx, func(tx *bbolt.Tx) error {
		b := buckets(tx)
		q.nextSeq = b.entries.Sequence() + 1 + uint64(len(recs)) // the records follow the file's entries
		return b.root.Delete(keyLogClean)                        // records may wait in the log from now on
	})
	if err != nil {
		return 0, fmt.Errorf("open write-ahead log %s: %w", dir, err)
	}
	for _, r := range recs {
		lr, err := decodeLogRec(r)
		if err != nil {
			return 0, fmt.Errorf("open write-ahead log %s: %w: record %d: %w", dir, store.ErrCorrupt, r.LSN, err)
		}
		q.ov.add(lr)
	}
	if err := q.applyAll(ctx); err != nil {
		return 0, fmt.Errorf("replay write-ahead log %s: %w", dir, err)
	}
	// A segment that cannot go now (another program has it open, as a
	// virus scanner may on Windows) goes at a later trim.
	_ = q.log.Trim(q.log.Durable())
	return len(recs), nil
}

// logPresent refuses a log directory without segments when the database
// says records may be waiting in it: receipts acknowledged into it would
// be lost without a word.
func logPresent(dir string, mark uint64) error {
	segs, err := wal.Count(dir)
	if err != nil || segs > 0 {
		return err
	}
	return fmt.Errorf("open write-ahead log %s: %w: the database has applied its records up to %d, "+
		"and receiptd did not stop cleanly, but the log's directory holds no segment: receipts acknowledged "+
		"in the last moments before it stopped may be lost; put the directory back, or restore a backup "+
		"with `receiptd restore FILE`", dir, store.ErrCorrupt, mark)
}

func newLogID() []byte {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if b == [8]byte{} {
		b[7] = 1
	}
	return b[:]
}

func decodeLogRec(r wal.Record) (*logRec, error) {
	if len(r.Data) == 0 || r.Data[0] != recEnqueue {
		return nil, errors.New("unknown record type")
	}
	enc := bytes.Clone(r.Data[1:])
	e, err := decode(enc)
	if err != nil {
		return nil, err
	}
	seq, ok := ParseID(e.QueueID)
	if !ok || e.State != StateQueued || e.Kind != KindReceipt || e.IdemKey == "" {
		return nil, fmt.Errorf("not a queued receipt (%s %s %s)", e.QueueID, e.Kind, e.State)
	}
	return &logRec{lsn: r.LSN, seq: seq, e: e, enc: enc}, nil
}

// enqueueLogged is Enqueue with a log: the decision under walMu from the
// overlay and the file, a new receipt appended to the log, and the wait
// for its flush outside walMu, shared with every enqueue of the moment.
func (q *Queue) enqueueLogged(ctx context.Context, r NewReceipt, now time.Time) (Entry, bool, error) {
	if err := q.st.Writable(); err != nil {
		return Entry{}, false, err
	}
	q.walMu.Lock()
	if q.closed {
		q.walMu.Unlock()
		return Entry{}, false, fmt.Errorf("%w: the queue is closed", store.ErrClosed)
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
	q.ov.add(&logRec{lsn: lsn, seq: seq, e: e, enc: rec[1:]})
	q.walMu.Unlock()
	if err := q.log.Sync(ctx, lsn); err != nil {
		return Entry{}, false, q.logError(err)
	}
	select {
	case q.applyCh <- struct{}{}:
	default:
	}
	q.signal()
	return e, false, nil
}

// lookupKey is the keyLookup of an enqueue with a log: the overlay first,
// then the file (the order that cannot miss a record being applied).
func (q *Queue) lookupKey(key, hash string) (e *Entry, lsn uint64, same bool, err error) {
	if r := q.ov.key(key); r != nil {
		e := r.e
		return &e, r.lsn, r.e.BodyHash == hash, nil
	}
	err = q.st.View(func(tx *bbolt.Tx) error {
		// Most keys are new: look in the one bucket before opening them all.
		if tx.Bucket(store.BucketQueue).Bucket(bucketIdem).Get([]byte(key)) == nil {
			return nil
		}
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

// view runs fn in a read transaction, with the durable records the file
// has not applied yet (oldest first; none without a log). The overlay is
// read before the transaction begins, so a record applied meanwhile is in
// the file fn reads, and left out of pend by the file's mark.
func (q *Queue) view(fn func(b bkts, pend []*logRec) error) error {
	var snap []*logRec
	if q.log != nil {
		snap = q.ov.snapshot(q.log.Durable())
	}
	return q.st.View(func(tx *bbolt.Tx) error {
		b := buckets(tx)
		pend := snap
		if len(snap) > 0 {
			mark := b.logMark()
			i := 0
			for i < len(snap) && snap[i].lsn <= mark {
				i++
			}
			pend = snap[i:]
		}
		return fn(b, pend)
	})
}

// DetachLog makes the file forget the write-ahead log it was used with,
// so the next Open with a log starts a new one: restore gives a restored
// copy its own log, and the log in the data directory (another database's
// by then) is never replayed into it.
func (q *Queue) DetachLog(ctx context.Context) error {
	err := q.update(ctx, func(b bkts) error {
		for _, k := range [][]byte{keyLogID, keyLogApplied, keyLogClean} {
			if err := b.root.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("detach write-ahead log: %w", err)
	}
	return nil
}
