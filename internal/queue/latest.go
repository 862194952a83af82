package queue

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Latest returns up to n entries in state s, newest first. It reads only
// those entries, however many there are in s, so the status page can show
// the last failures of a long audit trail cheaply.
func (q *Queue) Latest(s State, n int) ([]Entry, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []Entry
	err := q.view(func(b bkts, pend pending) error {
		// The log holds the newest receipts, in any state; then the tail
		// the newest queued. (An entry of the file whose outcome is only
		// in the log shows in its old state's list until it is applied.)
		for i := len(pend.news) - 1; i >= 0 && len(out) < n; i-- {
			if pend.news[i].e.State == s {
				out = append(out, pend.news[i].e)
			}
		}
		if s == StateQueued {
			var seqs []uint64
			var err error
			if len(out) < n { // tailSeqs takes limit 0 as all
				seqs, err = b.tailSeqs(0, n-len(out), true)
			}
			if err != nil {
				return err
			}
			if err := b.each(seqs, func(e *Entry) error { out = append(out, *e); return nil }); err != nil {
				return err
			}
		}
		prefix := append([]byte(s), 0)
		c := b.bystate.Cursor()
		// Seek past the last key of s: the prefix with its separator
		// incremented is the first key after every key of s.
		end := append([]byte(s), 1)
		k, _ := c.Seek(end)
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < n; k, _ = c.Prev() {
			e, err := b.load(binary.BigEndian.Uint64(k[len(prefix):]))
			if err != nil {
				return err
			}
			if e = pend.latest(e); e.State != s {
				continue // its outcome, in the log, moved it
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("latest %s: %w", s, err)
	}
	return out, nil
}
