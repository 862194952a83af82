package queue

import (
	"context"
	"fmt"
	"slices"

	"github.com/receiptd/receiptd/internal/wal"
)

// DecodeRecord decodes an entry's record as the entries bucket holds it
// (record.go), for package salvage, which reads records out of the pages
// of a damaged file. It checks the record's own structure only: whether
// it is the record of the key it was found under is the caller's check.
func DecodeRecord(v []byte) (Entry, error) { return decode(v) }

// DecodeLogRecord decodes a record of the write-ahead log (log.go): a new
// receipt (queued, or sending when its accept carried the claim), or an
// entry as an attempt's outcome left it (an outcome record), which
// replaces the entry in sending it finished.
func DecodeLogRecord(r wal.Record) (Entry, error) {
	lr, err := decodeLogRec(r)
	if err != nil {
		return Entry{}, fmt.Errorf("log record %d: %w", r.LSN, err)
	}
	return lr.e, nil
}

// rebuildBatch bounds the entries one Rebuild commit writes.
const rebuildBatch = 1000

// Rebuild writes entries recovered from a damaged database (receiptd
// salvage) into q, which must be empty and opened without a log: each
// entry in the state it was found in, with every index row the queue
// keeps for it (state, pending, counts, the idempotency key, the upstream
// id of a sent receipt, a delete's target). Where two entries hold the
// same idempotency key or delete target, the row points at the newer
// (higher queueId), as the queue wrote it. The queueId sequence continues
// after sequence, or after the highest entry when that is higher. Entries
// must have distinct queueIds; they are written in queueId order, in
// commits of rebuildBatch. Entries left in sending are recovered by the
// next Open, as after a crash.
func (q *Queue) Rebuild(ctx context.Context, entries []Entry, sequence uint64) error {
	if q.log != nil {
		return fmt.Errorf("rebuild: %w: the queue has a write-ahead log", ErrInvalid)
	}
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return cmpID(a.QueueID, b.QueueID) })
	for i := range sorted {
		seq, ok := ParseID(sorted[i].QueueID)
		if !ok || (i > 0 && sorted[i-1].QueueID == sorted[i].QueueID) {
			return fmt.Errorf("rebuild: %w: bad or repeated queueId %q", ErrInvalid, sorted[i].QueueID)
		}
		sequence = max(sequence, seq)
	}
	err := q.update(ctx, func(b bkts) error {
		if k, _ := b.entries.Cursor().First(); k != nil || b.entries.Sequence() != 0 {
			return fmt.Errorf("rebuild: %w: the queue is not empty", ErrInvalid)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for len(sorted) > 0 {
		n := min(len(sorted), rebuildBatch)
		batch := sorted[:n]
		sorted = sorted[n:]
		if err := q.update(ctx, func(b bkts) error { return rebuildSome(b, batch) }); err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
	}
	err = q.update(ctx, func(b bkts) error {
		if err := b.entries.SetSequence(sequence); err != nil {
			return err
		}
		return b.root.Put(keyIndexed, seqKey(sequence))
	})
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	return nil
}

func cmpID(a, b string) int {
	x, _ := ParseID(a)
	y, _ := ParseID(b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// rebuildSome writes entries with their index rows.
func rebuildSome(b bkts, entries []Entry) error {
	for i := range entries {
		e := &entries[i]
		seq, _ := ParseID(e.QueueID)
		if !slices.Contains(kinds, e.Kind) || !slices.Contains(AllStates, e.State) {
			return fmt.Errorf("%w: %s has kind %q, state %q", ErrInvalid, e.QueueID, e.Kind, e.State)
		}
		if e.Attempts == nil {
			e.Attempts = []Attempt{}
		}
		if err := b.putIndexed(seq, e); err != nil {
			return err
		}
		if err := rebuildRows(b, seq, e); err != nil {
			return err
		}
	}
	return nil
}

// rebuildRows writes the rows that find e by something other than its
// queueId.
func rebuildRows(b bkts, seq uint64, e *Entry) error {
	if e.Kind == KindDelete {
		key := e.DeleteTarget
		if key == "" {
			key = e.DeleteID
		}
		if key == "" {
			return nil
		}
		return b.deletes.Put([]byte(key), seqKey(seq))
	}
	if e.IdemKey != "" {
		if err := b.putIdem(e.IdemKey, seq, e.BodyHash); err != nil {
			return err
		}
	}
	return b.putUpstream(seq, e)
}
