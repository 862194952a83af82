package queue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// DeleteAction says what RequestDelete did; see the package doc's table.
type DeleteAction string

// Delete actions.
const (
	// DeleteCancelled: the receipt was cancelled locally and is never sent.
	DeleteCancelled DeleteAction = "cancelled"
	// DeleteQueued: a new delete entry was queued.
	DeleteQueued DeleteAction = "delete_queued"
	// DeleteExisting: an earlier request already covers this one; the
	// returned entry is the one that does (a cancelled receipt or a delete).
	DeleteExisting DeleteAction = "existing"
)

// RequestDelete handles DELETE /rest/receipt. id is a queueId or an
// upstream receipt id; date is the date to send, defaulting to the
// receipt's own date when known. now is the acceptance time.
func (q *Queue) RequestDelete(ctx context.Context, id, date string, now time.Time) (Entry, DeleteAction, error) {
	if id == "" {
		return Entry{}, "", fmt.Errorf("request delete: %w: empty id", ErrInvalid)
	}
	if err := q.indexTailInSlices(ctx); err != nil {
		return Entry{}, "", fmt.Errorf("request delete %s: %w", id, err)
	}
	var (
		e      Entry
		action DeleteAction
	)
	err := q.exclusive(ctx, func(b bkts) error {
		var err error
		e, action, err = requestDelete(b, id, date, now.UTC())
		return err
	})
	if err != nil {
		return Entry{}, "", fmt.Errorf("request delete %s: %w", id, err)
	}
	if action == DeleteQueued {
		q.signal()
	}
	return e, action, nil
}

// indexTailInSlices indexes the unindexed tail in commits of
// Options.TailIndexBatch entries until at most that many are left, so the commit
// of a delete request, which indexes the rest, stays small, and enqueues
// never wait behind one large transaction after a long outage.
func (q *Queue) indexTailInSlices(ctx context.Context) error {
	for {
		var n uint64
		err := q.st.View(func(tx *bbolt.Tx) error {
			lo, hi, err := buckets(tx).tail()
			if lo <= hi {
				n = hi - lo + 1
			}
			return err
		})
		if err != nil || n <= uint64(q.tailBatch) {
			return err
		}
		if err := q.update(ctx, func(b bkts) error {
			return b.indexTail(q.tailBatch)
		}); err != nil {
			return err
		}
	}
}

func requestDelete(b bkts, id, date string, now time.Time) (Entry, DeleteAction, error) {
	// The target may be in the tail, and a new delete entry is inserted
	// with its index rows.
	if err := b.indexTail(0); err != nil {
		return Entry{}, "", err
	}
	target, found, err := resolveTarget(b, id)
	if err != nil {
		return Entry{}, "", err
	}
	if !found {
		if _, ok := ParseID(id); ok {
			// Upstream ids are 33 digits: a queueId that matches nothing is
			// a mistake (or pruned), never something to send upstream.
			return Entry{}, "", fmt.Errorf("%w: %s (and it is not an upstream receipt id)", ErrNotFound, id)
		}
		if d, ok, err := existingDelete(b, id); ok || err != nil {
			return d, DeleteExisting, err
		}
		return newDelete(b, "", id, date, id, now)
	}
	if target.Kind == KindDelete {
		return Entry{}, "", fmt.Errorf("%w: %s is itself a delete request", ErrIllegalTransition, target.QueueID)
	}
	if d, ok, err := existingDelete(b, target.QueueID); ok || err != nil {
		return d, DeleteExisting, err
	}
	switch target.State {
	case StateCancelled:
		return target, DeleteExisting, nil
	case StateQueued, StateRejected:
		if target.State == StateRejected || target.Ambiguous == 0 {
			target.Outcome = withMessage(target.Outcome, "cancelled by a delete request before reaching the tax service")
			err := b.setState(&target, StateCancelled, now)
			return target, DeleteCancelled, err
		}
		return newDelete(b, target.QueueID, "", date, target.QueueID, now)
	case StateSending, StateHeld:
		return newDelete(b, target.QueueID, "", date, target.QueueID, now)
	case StateSent, StatePayment:
		if target.Outcome == nil || target.Outcome.ID == "" {
			return Entry{}, "", fmt.Errorf("%w: %s has no upstream id to delete", ErrIllegalTransition, target.QueueID)
		}
		if date == "" {
			date = target.Outcome.Date
		}
		return newDelete(b, target.QueueID, target.Outcome.ID, date, target.QueueID, now)
	}
	return Entry{}, "", fmt.Errorf("%w: cannot delete %s in state %s", ErrIllegalTransition, target.QueueID, target.State)
}

// resolveTarget finds the receipt id names: a queueId first, then an
// upstream id.
func resolveTarget(b bkts, id string) (Entry, bool, error) {
	if _, ok := ParseID(id); ok {
		e, _, err := b.loadID(id)
		if err == nil {
			return e, true, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return Entry{}, false, err
		}
	}
	if v := b.upstream.Get([]byte(id)); len(v) == 8 {
		e, err := b.load(binary.BigEndian.Uint64(v))
		if err == nil {
			return e, true, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return Entry{}, false, err
		}
	}
	return Entry{}, false, nil
}

// existingDelete returns the live delete entry indexed under key, if any.
// A delete that ended delete_rejected does not block a new request.
func existingDelete(b bkts, key string) (Entry, bool, error) {
	v := b.deletes.Get([]byte(key))
	if len(v) != 8 {
		return Entry{}, false, nil
	}
	d, err := b.load(binary.BigEndian.Uint64(v))
	if errors.Is(err, ErrNotFound) {
		return Entry{}, false, nil
	}
	if err != nil || d.State == StateDeleteRejected {
		return Entry{}, false, err
	}
	return d, true, nil
}

func newDelete(b bkts, target, deleteID, date, indexKey string, now time.Time) (Entry, DeleteAction, error) {
	seq, err := b.entries.NextSequence()
	if err != nil {
		return Entry{}, "", err
	}
	d := Entry{QueueID: FormatID(seq), Kind: KindDelete, State: StateDeleteQueued,
		AcceptedAt: now, UpdatedAt: now, Attempts: []Attempt{},
		DeleteTarget: target, DeleteID: deleteID, DeleteDate: date}
	if deleteID != "" {
		d.Body = deleteBody(deleteID, date)
	}
	if err := b.insert(seq, &d); err != nil {
		return Entry{}, "", err
	}
	if err := b.deletes.Put([]byte(indexKey), seqKey(seq)); err != nil {
		return Entry{}, "", err
	}
	return d, DeleteQueued, nil
}

func withMessage(o *Outcome, msg string) *Outcome {
	var out Outcome
	if o != nil {
		out = *o
	}
	out.Message = msg
	return &out
}
