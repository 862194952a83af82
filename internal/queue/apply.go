package queue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

// update runs fn in a write transaction of the store, after applying the
// log's durable records (log.go), so fn sees every acknowledged receipt.
// Like store.Update, fn may run more than once.
func (q *Queue) update(ctx context.Context, fn func(b bkts) error) error {
	if q.log == nil {
		return q.st.Update(ctx, func(tx *bbolt.Tx) error { return fn(q.buckets(tx)) })
	}
	var mark uint64
	err := q.st.Update(ctx, func(tx *bbolt.Tx) (err error) {
		b := q.buckets(tx)
		if mark, err = q.applyTx(b, applyBatch); err != nil {
			return err
		}
		return fn(b)
	})
	if err == nil {
		q.applied(mark)
	}
	return err
}

// buckets is the queue's buckets in a write transaction of its own:
// with its key filter, which putIdem adds to.
func (q *Queue) buckets(tx *bbolt.Tx) bkts {
	b := buckets(tx)
	b.keys = q.keys
	return b
}

// logMark is the LSN of the newest record applied to the file.
func (b bkts) logMark() uint64 {
	if v := b.root.Get(keyLogApplied); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// applyTx applies up to limit durable records after the file's mark and
// returns the new mark. A record is a new receipt with the next seq and
// its idempotency row: a queued one joins the unindexed tail; one in
// sending (the accept carried its claim) gets its index rows, after the
// tail before it gets its own, so the tail stays the newest queued
// receipts.
func (q *Queue) applyTx(b bkts, limit int) (uint64, error) {
	mark := b.logMark()
	recs := q.ov.after(mark, q.log.Durable(), limit)
	folded := foldable(recs)
	for _, r := range recs {
		if r.lsn != mark+1 {
			return 0, fmt.Errorf("%w: log record %d comes after applied record %d", store.ErrCorrupt, r.lsn, mark)
		}
		if r.fin {
			if folded[r.seq] != r { // else written with its receipt's record
				if err := applyFinish(b, r); err != nil {
					return 0, fmt.Errorf("log record %d: %w", r.lsn, err)
				}
			}
			mark = r.lsn
			continue
		}
		switch {
		case r.seq != b.entries.Sequence()+1:
			return 0, fmt.Errorf("%w: log record %d holds %s, but the queue's next entry is %s",
				store.ErrCorrupt, r.lsn, r.e.QueueID, FormatID(b.entries.Sequence()+1))
		case b.keys.mayHave(r.e.IdemKey) && b.idem.Get([]byte(r.e.IdemKey)) != nil: // a key the filter never saw has no row
			return 0, fmt.Errorf("%w: log record %d: idempotency key %q already has a row", store.ErrCorrupt, r.lsn, r.e.IdemKey)
		}
		if r.e.State == StateSending {
			if err := b.indexTail(0); err != nil {
				return 0, err
			}
		}
		if err := b.entries.SetSequence(r.seq); err != nil {
			return 0, err
		}
		if f := folded[r.seq]; f != nil {
			if err := applyFolded(b, r, f); err != nil {
				return 0, fmt.Errorf("log records %d and %d: %w", r.lsn, f.lsn, err)
			}
		} else if err := b.entries.Put(seqKey(r.seq), r.enc); err != nil {
			return 0, err
		} else if r.e.State == StateSending {
			if err := b.indexSending(r.seq); err != nil {
				return 0, err
			}
		}
		if err := b.putIdem(r.e.IdemKey, r.seq, r.e.BodyHash); err != nil {
			return 0, err
		}
		mark = r.lsn
	}
	if len(recs) > 0 {
		if err := b.root.Put(keyLogApplied, seqKey(mark)); err != nil {
			return 0, err
		}
	}
	return mark, nil
}

// foldable returns, by seq, the outcome records of recs that can be
// written with their receipt's record: the receipt logged in sending (its
// accept carried the claim) and its one outcome, both in recs, as an
// online sale's two records nearly always are. Nothing else touches the
// entry between them: any other write of the file applies the log first.
func foldable(recs []*logRec) map[uint64]*logRec {
	var out map[uint64]*logRec
	for _, r := range recs {
		switch {
		case !r.fin && r.e.State == StateSending:
			if out == nil {
				out = map[uint64]*logRec{}
			}
			out[r.seq] = nil // its receipt is here, no outcome yet
		case r.fin:
			if f, ok := out[r.seq]; ok {
				if f == nil {
					out[r.seq] = r
				} else {
					delete(out, r.seq) // a second outcome: each applied as it comes
				}
			}
		}
	}
	for seq, f := range out {
		if f == nil {
			delete(out, seq)
		}
	}
	return out
}

// applyFolded writes receipt record r, logged in sending, in the state
// its outcome record f left it, with the rows of that state: what
// applying r and then f writes, without writing the entry twice and
// putting and deleting its sending row.
func applyFolded(b bkts, r, f *logRec) error {
	e := f.e
	if !Legal(e.Kind, StateSending, e.State) { // as setState checks
		return fmt.Errorf("%w: the outcome of %s: %w", store.ErrCorrupt, e.QueueID, illegal(&r.e, e.State))
	}
	if err := b.insert(r.seq, &e); err != nil {
		return err
	}
	return b.putUpstream(r.seq, &e)
}

// applyFinish applies an outcome record: the entry, in sending in the
// file, moves to the record's state with every index row, and takes the
// record's attempts and outcome, as finishTx would have written them.
func applyFinish(b bkts, r *logRec) error {
	cur, err := b.load(r.seq)
	if err != nil {
		return fmt.Errorf("%w: the outcome of %s: %w", store.ErrCorrupt, r.e.QueueID, err)
	}
	if cur.State != StateSending {
		return fmt.Errorf("%w: the outcome of %s comes for an entry in %s", store.ErrCorrupt, r.e.QueueID, cur.State)
	}
	e := r.e
	e.State = StateSending
	if err := b.setState(&e, r.e.State, r.e.UpdatedAt); err != nil {
		return err
	}
	return b.putUpstream(r.seq, &e)
}

// applied is told, after a commit, that the file holds every record up to
// mark: they leave memory, and segments that hold nothing newer go.
func (q *Queue) applied(mark uint64) {
	if q.ov.drop(mark) {
		q.signal() // an outcome applied: a delete may wait for that receipt
	}
	// A segment that cannot be removed now is tried again at the next
	// commit; nothing depends on it being gone.
	_ = q.log.Trim(mark)
}

// applySome applies up to applyBatch durable records in one commit and
// reports how many.
func (q *Queue) applySome(ctx context.Context) (int, error) {
	durable := q.log.Durable()
	before := q.ov.upTo(durable)
	if before == 0 {
		return 0, nil
	}
	if err := q.update(ctx, func(bkts) error { return nil }); err != nil {
		return 0, err
	}
	return before - q.ov.upTo(durable), nil
}

// applyAll applies every durable record.
func (q *Queue) applyAll(ctx context.Context) error {
	if q.log == nil {
		return nil
	}
	for {
		n, err := q.applySome(ctx)
		if err != nil || n == 0 {
			return err
		}
	}
}

// ApplyAll applies every acknowledged receipt to the database file, so that
// a copy of the file (a backup) holds them all. Without a log it does
// nothing.
func (q *Queue) ApplyAll(ctx context.Context) error {
	if err := q.applyAll(ctx); err != nil {
		return fmt.Errorf("apply write-ahead log: %w", err)
	}
	return nil
}

// ApplyLoop applies the log's records to the database until ctx ends:
// once the till has been quiet for Options.ApplyDelay (no record made
// durable in it), or at once when applySoon records wait, everything then
// durable, in commits of up to applyBatch records. A commit writes pages
// and fdatasyncs the file, on the disk and the cores a sale's own
// fdatasync and send need: so none is made while sales follow each other
// closely, and a till that makes a sale now and then makes one commit
// after each, in the quiet that follows it. It wakes only when receipts
// arrive, and then once an ApplyDelay until the till is quiet. A full
// disk is retried every second; any other failure of the store ends it
// with the error (the store then refuses every write, and Enqueue with
// it). Without a log it returns at once.
func (q *Queue) ApplyLoop(ctx context.Context) error {
	if q.log == nil {
		return nil
	}
	for {
		if q.ov.len() == 0 && !q.awaitApply(ctx, nil) {
			return nil
		}
		for q.ov.len() < applySoon {
			last := q.log.Durable()
			t := time.NewTimer(q.applyDelay)
			ok := q.awaitApply(ctx, t.C)
			t.Stop()
			if !ok {
				return nil
			}
			if q.log.Durable() == last {
				break // quiet for an ApplyDelay
			}
		}
		var err error
		for target := q.log.Durable(); err == nil && q.ov.upTo(target) > 0; {
			_, err = q.applySome(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, store.ErrDiskFull):
			if !clock.Sleep(ctx, time.Second) {
				return nil
			}
		case err != nil:
			err = fmt.Errorf("apply write-ahead log: %w", err)
			q.st.Fail(err) // acknowledged receipts can no longer reach the file: accept no more
			return err
		}
	}
}

// awaitApply waits for a signal from enqueueLogged (the overlay's first
// record, or applySoon waiting) or for timeout; false when ctx ended.
func (q *Queue) awaitApply(ctx context.Context, timeout <-chan time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-q.applyCh:
	case <-timeout:
	}
	return true
}

// LogFull reports that the write-ahead log cannot grow, so new receipts
// are refused with 507 (ErrDiskFull), and since when; a nil error while it
// can, or without a log. (A failure of the log is the store's: Store.Fail.)
func (q *Queue) LogFull() (since time.Time, err error) {
	if q.log == nil {
		return time.Time{}, nil
	}
	return q.log.Full()
}

// LogStats are the write-ahead log's flushes and the records they made
// durable since Open; zero without a log.
func (q *Queue) LogStats() (flushes, records uint64) {
	if q.log == nil {
		return 0, 0
	}
	st := q.log.Stats()
	return st.Flushes, st.Records
}

// exclusive runs fn in a write transaction while no enqueue can take a
// queueId, with every record durable and applied first, so fn may take
// queueIds from the file's sequence (a delete request, a corrected
// receipt).
func (q *Queue) exclusive(ctx context.Context, fn func(b bkts) error) error {
	if q.log == nil {
		return q.update(ctx, fn)
	}
	q.walMu.Lock()
	defer q.walMu.Unlock()
	if err := q.log.Sync(ctx, q.lastLSN); err != nil {
		return q.logError(err)
	}
	if err := q.applyAll(ctx); err != nil {
		return err
	}
	if n := q.ov.len(); n > 0 {
		return fmt.Errorf("%d log records are durable but not applied", n)
	}
	var seq uint64
	err := q.update(ctx, func(b bkts) error {
		if err := fn(b); err != nil {
			return err
		}
		seq = b.entries.Sequence()
		return nil
	})
	if err == nil {
		q.nextSeq = seq + 1
	}
	return err
}

// logError gives a log error the store's sentinel of the same meaning,
// which the API answers by: ErrDiskFull (507), ErrFailed (503). A failed
// log fails the store (Store.Fail), so every later write, replays
// included, is refused as after a failed commit.
func (q *Queue) logError(err error) error {
	switch {
	case errors.Is(err, wal.ErrDiskFull):
		return fmt.Errorf("%w: %w", store.ErrDiskFull, err)
	case errors.Is(err, wal.ErrFailed):
		q.st.Fail(err)
		return fmt.Errorf("%w: %w", store.ErrFailed, err)
	case errors.Is(err, wal.ErrClosed):
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	}
	return err
}

// Close applies every acknowledged receipt to the database, marks the log
// clean and closes it. Enqueue fails afterwards. Without a log it does
// nothing. Call it before the store's Close.
func (q *Queue) Close(ctx context.Context) error {
	if q.log == nil {
		return nil
	}
	q.walMu.Lock()
	defer q.walMu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	err := q.log.Sync(ctx, q.lastLSN)
	if err == nil {
		err = q.applyAll(ctx)
	}
	if err == nil && q.ov.len() == 0 {
		err = q.update(ctx, func(b bkts) error { return b.root.Put(keyLogClean, []byte{1}) })
	}
	if cerr := q.log.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close queue: %w", err)
	}
	return nil
}
