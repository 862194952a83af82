package queue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Get returns one entry, or ErrNotFound.
func (q *Queue) Get(queueID string) (Entry, error) {
	var e Entry
	err := q.view(func(b bkts, pend pending) error {
		var err error
		e, _, err = b.loadID(queueID)
		if seq, ok := ParseID(queueID); ok && errors.Is(err, ErrNotFound) {
			for _, r := range pend.news {
				if r.seq == seq {
					e, err = r.e, nil
				}
			}
		}
		if err == nil {
			e = pend.latest(e)
		}
		return err
	})
	if err != nil {
		return Entry{}, fmt.Errorf("get %s: %w", queueID, err)
	}
	return e, nil
}

// ListOptions selects a page of entries in FIFO order.
type ListOptions struct {
	State State  // only this state; empty means all
	Limit int    // page size; zero means 100, capped at 1000
	After string // cursor: the queueId after which the page starts
}

// List returns a page of entries and the cursor for the next page (empty
// when there is none). With State set it walks the state index only.
func (q *Queue) List(o ListOptions) ([]Entry, string, error) {
	limit := o.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	var after uint64
	if o.After != "" {
		var ok bool
		if after, ok = ParseID(o.After); !ok {
			return nil, "", fmt.Errorf("list: %w: bad cursor %q", ErrInvalid, o.After)
		}
	}
	var out []Entry
	var next string
	err := q.view(func(b bkts, pend pending) error {
		seqs, err := listSeqs(b, o.State, after, limit+1)
		if err != nil {
			return err
		}
		err = b.each(seqs, func(e *Entry) error {
			// An outcome only in the log shows; an entry it moved out of
			// o.State drops out (one it moved in shows once applied).
			if l := pend.latest(*e); o.State == "" || l.State == o.State {
				out = append(out, l)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range pend.news { // the log's records come after the file's
			if r.seq > after && len(out) <= limit && (o.State == "" || o.State == r.e.State) {
				out = append(out, r.e)
			}
		}
		if len(out) > limit {
			out = out[:limit]
			next = out[limit-1].QueueID
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list: %w", err)
	}
	return out, next, nil
}

func listSeqs(b bkts, s State, after uint64, n int) ([]uint64, error) {
	if s != "" {
		return b.seqsInState(s, after, n)
	}
	var out []uint64
	c := b.entries.Cursor()
	for k, _ := c.Seek(seqKey(after + 1)); k != nil && len(out) < n; k, _ = c.Next() {
		out = append(out, binary.BigEndian.Uint64(k))
	}
	return out, nil
}

// Counts returns the number of entries in every state, read from counters
// kept in the same transactions as the entries, plus the unindexed tail
// and the write-ahead log's records not yet applied.
func (q *Queue) Counts() (map[State]int, error) {
	out := make(map[State]int, len(AllStates))
	err := q.view(func(b bkts, pend pending) error {
		for _, s := range AllStates {
			if v := b.counts.Get([]byte(s)); len(v) == 8 {
				out[s] = int(binary.BigEndian.Uint64(v))
			} else {
				out[s] = 0
			}
		}
		lo, hi, err := b.tail()
		if lo <= hi {
			out[StateQueued] += int(hi - lo + 1)
		}
		for _, r := range pend.news { // the log's records not yet applied
			out[r.e.State]++
		}
		for _, r := range pend.upd { // outcomes of the file's entries in sending
			out[StateSending]--
			out[r.e.State]++
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	return out, nil
}

// ClaimableAhead counts the entries a claim at now would take before
// queueID (older and due), stopping at limit: the API uses it to see
// whether a new receipt can be sent within its wait. Deletes count only
// when they could be sent now. It reads at most the pending rows older than
// queueID, and the tail arithmetically.
func (q *Queue) ClaimableAhead(queueID string, now time.Time, limit int) (int, error) {
	seq, ok := ParseID(queueID)
	if !ok {
		return 0, fmt.Errorf("claimable ahead: %w: %q", ErrNotFound, queueID)
	}
	n := 0
	err := q.view(func(b bkts, pend pending) error {
		// The log's new receipts, and entries an outcome only in the log
		// put back in the queue.
		for _, r := range append(slices.Collect(maps.Values(pend.upd)), pend.news...) {
			if r.seq < seq && r.e.State == StateQueued && due(pendingRow(r.e.NextAttemptAt, r.e.UpdatedAt), now) {
				n++
			}
		}
		c := b.pending.Cursor()
		for k, v := c.First(); k != nil && n < limit && binary.BigEndian.Uint64(k) < seq; k, v = c.Next() {
			if !due(v, now) {
				continue
			}
			e, err := b.load(binary.BigEndian.Uint64(k))
			if err != nil {
				return err
			}
			if e.Kind == KindDelete {
				// Only a delete that would be sent now: one waiting for its
				// receipt, or about to be finished unsent, holds up nothing.
				if ready, _, err := deleteReady(b, &e); err != nil || !ready {
					if err != nil {
						return err
					}
					continue
				}
			}
			n++
		}
		lo, hi, err := b.tail()
		if lo <= hi && lo < seq {
			n += int(min(hi, seq-1) - lo + 1)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("claimable ahead of %s: %w", queueID, err)
	}
	return min(n, limit), nil
}

// unsentStates are the states of work not yet accepted upstream (package doc).
var unsentStates = []State{StateQueued, StateSending, StateHeld, StateDeleteQueued}

// OldestUnsent returns the acceptance time of the oldest unsent entry, and
// false when there is none. It reads the first row of four state indexes.
func (q *Queue) OldestUnsent() (time.Time, bool, error) {
	var oldest time.Time
	var found bool
	err := q.view(func(b bkts, pend pending) error {
		var first uint64
		for _, s := range unsentStates {
			for after := uint64(0); ; {
				seqs, err := b.seqsInState(s, after, 1)
				if err != nil {
					return err
				}
				if len(seqs) == 0 {
					break
				}
				if r := pend.upd[seqs[0]]; r != nil && !slices.Contains(unsentStates, r.e.State) {
					after = seqs[0] // finished by an outcome only in the log
					continue
				}
				if first == 0 || seqs[0] < first {
					first = seqs[0]
				}
				break
			}
		}
		if first == 0 {
			for _, r := range pend.news { // the log's records are newer than the file's
				if slices.Contains(unsentStates, r.e.State) {
					oldest, found = r.e.AcceptedAt, true
					break
				}
			}
			return nil
		}
		e, err := b.load(first)
		oldest, found = e.AcceptedAt, err == nil
		return err
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("oldest unsent: %w", err)
	}
	return oldest, found, nil
}

// finished states are final until an operator acts; Prune removes them.
var finishedStates = map[State]bool{StateSent: true, StatePayment: true, StateRejected: true,
	StateCancelled: true, StateDeleted: true, StateDeleteRejected: true}

const pruneBatch = 1000

// Prune removes finished entries (sent, payment, rejected, cancelled,
// deleted, delete_rejected) last updated before before, with their index
// rows, in transactions of at most 1000 entries. The walk is in FIFO order
// and stops at the first entry accepted at or after before, so it never
// reads entries newer than the retention window.
func (q *Queue) Prune(ctx context.Context, before time.Time) (int, error) {
	total := 0
	var from uint64
	for {
		var removed int
		var done bool
		err := q.update(ctx, func(b bkts) error {
			var err error
			removed, from, done, err = pruneSome(b, from, before)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("prune: %w", err)
		}
		total += removed
		if done {
			return total, nil
		}
	}
}

func pruneSome(b bkts, from uint64, before time.Time) (removed int, next uint64, done bool, err error) {
	type victim struct {
		seq uint64
		e   Entry
	}
	var victims []victim
	c := b.entries.Cursor()
	k, v := c.Seek(seqKey(from))
	for ; k != nil && len(victims) < pruneBatch; k, v = c.Next() {
		e, err := decode(v)
		if err != nil {
			return 0, 0, false, err
		}
		if !e.AcceptedAt.Before(before) {
			k = nil
			break
		}
		if finishedStates[e.State] && e.UpdatedAt.Before(before) {
			victims = append(victims, victim{binary.BigEndian.Uint64(k), e})
		}
		next = binary.BigEndian.Uint64(k) + 1
	}
	for _, vi := range victims {
		if err := b.remove(vi.seq, &vi.e); err != nil {
			return 0, 0, false, err
		}
	}
	return len(victims), next, k == nil, nil
}
