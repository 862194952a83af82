package queue

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// Claim moves up to max claimable entries, oldest first, to sending in one
// commit and returns them; fewer than max only when fewer are claimable.
// Claimable: queued receipts and delete_queued deletes whose NextAttemptAt
// is not after now; a delete only once its receipt has finished as sent or
// payment. A delete whose receipt ended rejected or cancelled is finished
// as delete_rejected here, never sent. The claim also indexes the oldest
// max(max, Options.TailIndexBatch) receipts of the unindexed tail (layout.go).
func (q *Queue) Claim(ctx context.Context, max int, now time.Time) ([]Entry, error) {
	if max <= 0 {
		return nil, nil
	}
	if idle, err := q.nothingToClaim(max, now); err != nil || idle {
		return nil, err
	}
	var out []Entry
	err := q.update(ctx, func(b bkts) (err error) {
		out, err = q.claimTx(b, max, now)
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
	if idle, sure := q.settled(); sure {
		return idle, nil
	}
	return q.nothingToClaimRead(max, now)
}

// settled answers nothingToClaim without building the log's pending view
// when the answer is plain, as it is on a till that sends each sale as it
// is made (each claim after an outcome, each accept that carries its
// claim, each poll of the worker asks): no durable record of the log
// leaves an entry claimable, and the file has no unindexed tail and no
// pending rows. sure false: the full reading (nothingToClaimRead)
// decides. It opens only the buckets it reads.
//
// The full reading's look at the deletes bucket is not needed here: it is
// for a delete that waits for its receipt's outcome in the log, and such a
// delete is delete_queued, so it has a pending row or a claimable record.
// Where the full reading says "not idle" for a delete row alone (a delete
// already sending or finished), a claim takes nothing, as settled says.
func (q *Queue) settled() (idle, sure bool) {
	if q.log != nil && q.ov.claimableUpTo(q.log.Durable()) {
		return false, false
	}
	_ = q.st.View(func(tx *bbolt.Tx) error {
		root := tx.Bucket(store.BucketQueue)
		b := bkts{root: root, entries: root.Bucket(bucketEntries)}
		if lo, hi, err := b.tail(); err != nil || lo <= hi {
			return nil // an unindexed tail is claimable; an error is the full reading's to report
		}
		if k, _ := root.Bucket(bucketPending).Cursor().First(); k != nil {
			return nil // pending rows: which are due is pickClaimable's to say
		}
		idle, sure = true, true
		return nil
	})
	return idle, sure
}

// nothingToClaimRead is nothingToClaim from the log's pending view and
// the file's index.
func (q *Queue) nothingToClaimRead(max int, now time.Time) (bool, error) {
	var idle bool
	err := q.viewDurable(func(b bkts, pend pending) error {
		for _, r := range pend.news {
			if r.e.State == StateQueued { // a receipt claimed at its accept is not to claim
				return nil
			}
		}
		for _, r := range pend.upd {
			if claimable(r.e.State) && due(pendingRow(r.e.NextAttemptAt, r.e.UpdatedAt), now) { // back in the queue and due: the claim applies it first
				return nil
			}
		}
		// A delete waits for a receipt's outcome: the claim applies it
		// first. Most tills have no delete row at all: one look at the
		// bucket instead of one for each outcome in the log.
		if k, _ := b.deletes.Cursor().First(); k != nil {
			for _, r := range append(slices.Collect(maps.Values(pend.upd)), pend.news...) {
				if r.fin && r.e.Kind == KindReceipt && b.deletes.Get([]byte(r.e.QueueID)) != nil {
					return nil
				}
			}
		}
		lo, hi, err := b.tail()
		if err != nil || lo <= hi {
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

// NothingClaimable reports that a claim at now would take nothing: no
// queued receipt in the log or the unindexed tail, and no due pending
// row to send. The API asks it before a new receipt's accept carries its
// claim (NewReceipt.Sending), so that a new sale does not go ahead of
// receipts waiting to be sent.
func (q *Queue) NothingClaimable(now time.Time) (bool, error) {
	return q.nothingToClaim(1, now)
}

// claimTx is Claim inside a write transaction.
func (q *Queue) claimTx(b bkts, limit int, now time.Time) ([]Entry, error) {
	// Tail entries are all claimable and newer than every indexed one, so
	// indexing limit of them is enough to claim limit, oldest first.
	if err := b.indexTail(max(q.tailBatch, limit)); err != nil {
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
