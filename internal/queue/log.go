package queue

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

var (
	keyLogID      = []byte("logId")      // the log's id: segments of another are refused
	keyLogApplied = []byte("logApplied") // LSN of the newest record applied
	keyLogClean   = []byte("logClean")   // present while every record is applied and the log closed
)

// recEnqueue is the type byte of an enqueue record: the entry as encode
// writes it follows, a receipt in state queued, or in state sending when
// the accept carried the claim (NewReceipt.Sending).
const recEnqueue = 1

// recFinish is the type byte of an outcome record (finishLogged): the
// entry as encode writes it follows, as the attempt's end left it, out of
// sending.
const recFinish = 2

// applyBatch bounds the records one transaction applies. It bounds the
// daemon's live heap under load too: the records held until they are
// applied (about 1.5 KB each with the sample receipt) and bbolt's copy of
// the pages a commit writes. With 4,096 the live heap of a 64-client
// burst was 19 MB, at the garbage collector's goal under the daemon's
// 32 MiB soft limit (cmd/receiptd/gc.go), so it collected without pause
// (GODEBUG=gctrace=1); with 1,024 it has room, and the burst's
// throughput rose by a tenth (docs/performance.md, 2026-11-29 evening).
const applyBatch = 1024

// applySoon is how many records waiting make ApplyLoop apply them without
// waiting for the till to go quiet: one commit's worth, about 1.5 MiB of
// log (an online sale makes two records, a queued receipt one), so a busy
// till's log and the records held in memory until they are applied stay
// bounded.
const applySoon = applyBatch

// logRec is a record not yet applied: the entry, and its encoding as it
// goes into the entries bucket. fin marks an outcome record: the entry
// as its attempt's end left it, which replaces the entry in sending.
type logRec struct {
	lsn, seq uint64
	e        Entry
	enc      []byte
	fin      bool
}

// overlay holds the records appended and not yet applied and committed,
// oldest first. LSNs rise by one from record to record, and so do the
// seqs of the new receipts among them. byKey and bySeq point at the
// newest record of an idempotency key and of an entry.
type overlay struct {
	mu    sync.RWMutex
	recs  []*logRec
	byKey map[string]*logRec
	bySeq map[uint64]*logRec
	// claimable holds the LSNs of the records whose entry is claimable
	// (claimable(e.State)), oldest first: the look before each claim asks
	// for the oldest, and most tills' logs have none.
	claimable []uint64
}

// add appends r and returns how many records the overlay holds now.
func (o *overlay) add(r *logRec) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recs = append(o.recs, r)
	if r.e.IdemKey != "" {
		o.byKey[r.e.IdemKey] = r
	}
	o.bySeq[r.seq] = r
	if claimable(r.e.State) {
		o.claimable = append(o.claimable, r.lsn)
	}
	return len(o.recs)
}

// key returns the newest record of an entry holding an idempotency key, if any.
func (o *overlay) key(k string) *logRec {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.byKey[k]
}

// entry returns the newest record of the entry seq, if any.
func (o *overlay) entry(seq uint64) *logRec {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.bySeq[seq]
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

// snapshot returns what reads see: the records up to durable, and the
// outcome records after it up to written. Those are in the log's file
// and their answer was handed over (finishLogged: the flush follows), so
// a read right after the answer sees the entry as the answer left it; a
// receipt's record is seen only once durable, as its POS is answered.
func (o *overlay) snapshot(durable, written uint64) []*logRec {
	written = max(written, durable)
	o.mu.RLock()
	defer o.mu.RUnlock()
	var out []*logRec
	for _, r := range o.recs {
		if r.lsn > written {
			break
		}
		if r.lsn <= durable || r.fin {
			out = append(out, r)
		}
	}
	return out
}

// claimableUpTo reports whether a record with an LSN up to upTo leaves its
// entry claimable.
func (o *overlay) claimableUpTo(upTo uint64) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return len(o.claimable) > 0 && o.claimable[0] <= upTo
}

// drop forgets the records up to LSN applied, and reports whether an
// outcome record was among them.
func (o *overlay) drop(applied uint64) (fins bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for n < len(o.recs) && o.recs[n].lsn <= applied {
		r := o.recs[n]
		if o.byKey[r.e.IdemKey] == r {
			delete(o.byKey, r.e.IdemKey)
		}
		if o.bySeq[r.seq] == r {
			delete(o.bySeq, r.seq)
		}
		fins = fins || r.fin
		o.recs[n] = nil
		n++
	}
	o.recs = o.recs[n:]
	if len(o.recs) == 0 {
		o.recs = nil // let the array go
	}
	c := 0
	for c < len(o.claimable) && o.claimable[c] <= applied {
		c++
	}
	o.claimable = o.claimable[c:]
	return fins
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
		news := 0
		for _, r := range recs {
			if len(r.Data) > 0 && r.Data[0] == recEnqueue {
				news++
			}
		}
		q.nextSeq = b.entries.Sequence() + 1 + uint64(news) // the new receipts follow the file's entries
		return b.root.Delete(keyLogClean)                   // records may wait in the log from now on
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
	if len(r.Data) == 0 || (r.Data[0] != recEnqueue && r.Data[0] != recFinish) {
		return nil, errors.New("unknown record type")
	}
	fin := r.Data[0] == recFinish
	enc := bytes.Clone(r.Data[1:])
	e, err := decode(enc)
	if err != nil {
		return nil, err
	}
	seq, ok := ParseID(e.QueueID)
	switch {
	case !ok:
		return nil, fmt.Errorf("bad queueId %q", e.QueueID)
	case fin && (e.State == StateSending || !Legal(e.Kind, StateSending, e.State)):
		return nil, fmt.Errorf("not an outcome (%s %s %s)", e.QueueID, e.Kind, e.State)
	case !fin && ((e.State != StateQueued && e.State != StateSending) || e.Kind != KindReceipt || e.IdemKey == ""):
		return nil, fmt.Errorf("not a new receipt (%s %s %s)", e.QueueID, e.Kind, e.State)
	}
	return &logRec{lsn: r.LSN, seq: seq, e: e, enc: enc, fin: fin}, nil
}

// pending is what the write-ahead log holds that the file does not yet:
// news, the new receipts, oldest first, each in its newest version (an
// outcome record replaces its receipt's record); upd, the newest outcome
// record of entries the file holds in sending.
type pending struct {
	news []*logRec
	upd  map[uint64]*logRec
}

// latest returns e, or the outcome record's entry that replaces it.
func (p pending) latest(e Entry) Entry {
	if seq, ok := ParseID(e.QueueID); ok && p.upd[seq] != nil {
		return p.upd[seq].e
	}
	return e
}

// view runs fn in a read transaction, with the records the file has not
// applied yet that reads see (overlay.snapshot; none without a log). The
// overlay is read before the transaction begins, so a record applied
// meanwhile is in the file fn reads, and left out of pend by the file's
// mark.
func (q *Queue) view(fn func(b bkts, pend pending) error) error {
	return q.viewUpTo(true, fn)
}

// viewDurable is view with the durable records alone: what a claim,
// which applies them first, will find.
func (q *Queue) viewDurable(fn func(b bkts, pend pending) error) error {
	return q.viewUpTo(false, fn)
}

func (q *Queue) viewUpTo(written bool, fn func(b bkts, pend pending) error) error {
	var snap []*logRec
	if q.log != nil {
		upTo := q.log.Written()
		durable := q.log.Durable()
		if !written {
			upTo = durable
		}
		snap = q.ov.snapshot(durable, upTo)
	}
	return q.st.View(func(tx *bbolt.Tx) error {
		b := buckets(tx)
		var p pending
		if len(snap) > 0 {
			mark := b.logMark()
			idx := map[uint64]int{}
			for _, r := range snap {
				if r.lsn <= mark {
					continue
				}
				if !r.fin {
					idx[r.seq] = len(p.news)
					p.news = append(p.news, r)
					continue
				}
				if i, ok := idx[r.seq]; ok {
					p.news[i] = r
					continue
				}
				if p.upd == nil {
					p.upd = map[uint64]*logRec{}
				}
				p.upd[r.seq] = r
			}
		}
		return fn(b, p)
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
