package queue

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// CheckIndexes rebuilds the rows derived from the entries (the state
// index, the pending index with each entry's NextAttemptAt, and the
// per-state counters) and reports every row that is missing, extra or
// different, so tests can show the copies never drift from the entries.
// Entries in the unindexed tail must be queued receipts, claimable now,
// with no rows at all, and the tail must have no gaps.
func CheckIndexes(st *store.Store) error {
	return st.View(func(tx *bbolt.Tx) error {
		b := buckets(tx)
		lo, hi, err := b.tail()
		if err != nil {
			return err
		}
		var tailProblems []error
		if lo > hi+1 {
			tailProblems = append(tailProblems, fmt.Errorf("index mark %d is past the sequence %d", lo-1, hi))
		}
		for seq := lo; seq <= hi; seq++ {
			if b.entries.Get(seqKey(seq)) == nil {
				tailProblems = append(tailProblems, fmt.Errorf("tail: entry %d is missing", seq))
			}
		}
		byState := map[string]bool{}
		pending := map[string][]byte{}
		counts := map[State]uint64{}
		err = b.entries.ForEach(func(k, v []byte) error {
			e, err := decode(v)
			if err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			seq := binary.BigEndian.Uint64(k)
			if e.QueueID != FormatID(seq) {
				return fmt.Errorf("entry %x holds queueId %s", k, e.QueueID)
			}
			if seq >= lo {
				switch {
				case seq > hi:
					tailProblems = append(tailProblems, fmt.Errorf("entry %s is past the sequence %d", e.QueueID, hi))
				case e.Kind != KindReceipt || e.State != StateQueued || !e.NextAttemptAt.IsZero():
					tailProblems = append(tailProblems, fmt.Errorf("tail: %s is a %s in %s, next attempt %v; want a queued receipt, claimable now",
						e.QueueID, e.Kind, e.State, e.NextAttemptAt))
				}
				return nil
			}
			byState[string(stateKey(e.State, seq))] = true
			if claimable(e.State) {
				row := make([]byte, 8)
				if !e.NextAttemptAt.IsZero() {
					row = binary.BigEndian.AppendUint64(nil, uint64(e.NextAttemptAt.UnixNano()))
					row = binary.BigEndian.AppendUint64(row, uint64(e.UpdatedAt.UnixNano()))
				}
				pending[string(k)] = row
			}
			counts[e.State]++
			return nil
		})
		if err != nil {
			return err
		}
		problems := tailProblems
		_ = b.bystate.ForEach(func(k, _ []byte) error {
			if !byState[string(k)] {
				problems = append(problems, fmt.Errorf("bystate: extra row %q", k))
			}
			delete(byState, string(k))
			return nil
		})
		for k := range byState {
			problems = append(problems, fmt.Errorf("bystate: missing row %q", k))
		}
		_ = b.pending.ForEach(func(k, v []byte) error {
			want, ok := pending[string(k)]
			switch {
			case !ok:
				problems = append(problems, fmt.Errorf("pending: extra row %x", k))
			case !bytes.Equal(v, want):
				problems = append(problems, fmt.Errorf("pending: row %x is %x, entry says %x", k, v, want))
			}
			delete(pending, string(k))
			return nil
		})
		for k := range pending {
			problems = append(problems, fmt.Errorf("pending: missing row %x", k))
		}
		_ = b.counts.ForEach(func(k, v []byte) error {
			if len(v) != 8 || binary.BigEndian.Uint64(v) != counts[State(k)] {
				problems = append(problems, fmt.Errorf("counts: %s is %x, entries say %d", k, v, counts[State(k)]))
			}
			delete(counts, State(k))
			return nil
		})
		for s, n := range counts {
			problems = append(problems, fmt.Errorf("counts: %s missing, entries say %d", s, n))
		}
		return errors.Join(problems...)
	})
}

// TailLen is how many entries are in the unindexed tail.
func TailLen(st *store.Store) (n int, err error) {
	err = st.View(func(tx *bbolt.Tx) error {
		lo, hi, err := buckets(tx).tail()
		if lo > hi+1 {
			return fmt.Errorf("index mark %d is past the sequence %d", lo-1, hi)
		}
		n = int(hi + 1 - lo)
		return err
	})
	return n, err
}

// SetTailIndexBatch changes how many tail entries q's claims index, as
// Options.TailIndexBatch would have at Open; for tests whose helper opens
// the queue. Call it before q is used.
func SetTailIndexBatch(q *Queue, n int) {
	q.tailBatch = n
}

// Abandon closes q's write-ahead log without applying it or marking it
// clean, as a kill would leave it, so a test can open the queue again.
func Abandon(q *Queue) error {
	if q.log == nil {
		return nil
	}
	q.walMu.Lock()
	defer q.walMu.Unlock()
	q.closed = true
	return q.log.Close()
}

// FileEntries counts the entries the database file itself holds, without
// the write-ahead log's records not yet applied.
func FileEntries(st *store.Store) (n int, err error) {
	err = st.View(func(tx *bbolt.Tx) error {
		n = buckets(tx).entries.Stats().KeyN
		return nil
	})
	return n, err
}

// ApplySoon is how many records waiting make ApplyLoop apply without
// waiting for Options.ApplyDelay.
const ApplySoon = applySoon

// NothingToClaimRead is nothingToClaim's full reading alone (the log's
// pending view and the file's index), without its quick answer.
func (q *Queue) NothingToClaimRead(now time.Time) (bool, error) {
	return q.nothingToClaimRead(1, now)
}

// ClaimUnchecked is Claim without nothingToClaim's look first: the log
// applied and the claim's commit, whatever it finds.
func (q *Queue) ClaimUnchecked(ctx context.Context, max int, now time.Time) ([]Entry, error) {
	var out []Entry
	err := q.update(ctx, func(b bkts) (err error) {
		out, err = q.claimTx(b, max, now)
		return err
	})
	return out, err
}

// Settled is nothingToClaim's quick answer: sure false when it leaves the
// answer to the full reading.
func (q *Queue) Settled() (idle, sure bool) { return q.settled() }

// LogFlushed reports whether every record written to the log's file is
// durable (its fdatasync done).
func (q *Queue) LogFlushed() bool { return q.log.Durable() == q.log.Written() }
