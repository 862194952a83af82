package queue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// CheckIndexes rebuilds the rows derived from the entries (the state
// index, the pending index with each entry's NextAttemptAt, and the
// per-state counters) and reports every row that is missing, extra or
// different, so tests can show the copies never drift from the entries.
func CheckIndexes(st *store.Store) error {
	return st.View(func(tx *bbolt.Tx) error {
		b := buckets(tx)
		byState := map[string]bool{}
		pending := map[string][]byte{}
		counts := map[State]uint64{}
		err := b.entries.ForEach(func(k, v []byte) error {
			e, err := decode(v)
			if err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			seq := binary.BigEndian.Uint64(k)
			if e.QueueID != FormatID(seq) {
				return fmt.Errorf("entry %x holds queueId %s", k, e.QueueID)
			}
			byState[string(stateKey(e.State, seq))] = true
			if claimable(e.State) {
				var ns int64
				if !e.NextAttemptAt.IsZero() {
					ns = e.NextAttemptAt.UnixNano()
				}
				pending[string(k)] = binary.BigEndian.AppendUint64(nil, uint64(ns))
			}
			counts[e.State]++
			return nil
		})
		if err != nil {
			return err
		}
		var problems []error
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
