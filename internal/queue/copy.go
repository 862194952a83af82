package queue

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// Copy describes a copy of the database written by WriteCopy.
type Copy struct {
	Bytes int64 // the file's size
	// Entries is how many entries the copy holds by the queue's counters
	// (every state, plus the unindexed tail).
	Entries int
}

// WriteCopy applies every acknowledged receipt to the file (ApplyAll),
// then writes a consistent copy of the whole database to w from one bbolt
// read transaction and counts its entries in the same transaction.
//
// It holds none of the queue's locks while it copies: enqueues carry on
// into the write-ahead log, and claims, finishes and the log's batches
// commit into the file as usual (a bbolt reader never blocks the writer).
// Receipts acknowledged during the copy are not in it. ctx ends a copy
// midway with ctx's error.
func (q *Queue) WriteCopy(ctx context.Context, w io.Writer) (Copy, error) {
	if err := q.ApplyAll(ctx); err != nil {
		return Copy{}, fmt.Errorf("copy database: %w", err)
	}
	var c Copy
	err := q.st.View(func(tx *bbolt.Tx) error {
		n, err := countEntries(buckets(tx))
		if err != nil {
			return err
		}
		c.Entries = n
		c.Bytes, err = tx.WriteTo(ctxWriter{ctx, w})
		return err
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// bbolt's WriteTo formats its writer's error with %s.
			err = fmt.Errorf("%w: %v", cerr, err)
		}
		return c, fmt.Errorf("copy database %s: %w", q.st.Path(), err)
	}
	return c, nil
}

// CopySize is about the size of the copy WriteCopy would write now: the
// database's pages in use, read in one read transaction (receipts still
// only in the write-ahead log add theirs). A snapshot reads it to leave
// the disk room (package backup).
func (q *Queue) CopySize() (int64, error) {
	var n int64
	err := q.st.View(func(tx *bbolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return n, err
}

// CheckCopy checks a copy made by WriteCopy, opened with
// store.OpenReadOnly: every entry is walked, and their number must be the
// number the copy's counters give and want (what WriteCopy counted while
// writing it). A difference is store.ErrCorrupt.
func CheckCopy(st *store.Store, want int) error {
	return st.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(store.BucketQueue) == nil {
			return fmt.Errorf("%w: %s has no queue", store.ErrCorrupt, st.Path())
		}
		b := buckets(tx)
		if b.entries == nil || b.counts == nil {
			return fmt.Errorf("%w: %s has no entries or counts bucket", store.ErrCorrupt, st.Path())
		}
		counted, err := countEntries(b)
		if err != nil {
			return err
		}
		walked := b.entries.Stats().KeyN
		if walked != counted || walked != want {
			return fmt.Errorf("%w: %s holds %d entries, its counters say %d, and %d were copied",
				store.ErrCorrupt, st.Path(), walked, counted, want)
		}
		return nil
	})
}

// countEntries is the number of entries by the counters and the tail,
// without walking them.
func countEntries(b bkts) (int, error) {
	n := 0
	err := b.counts.ForEach(func(_, v []byte) error {
		if len(v) == 8 {
			n += int(binary.BigEndian.Uint64(v))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	lo, hi, err := b.tail()
	if lo <= hi {
		n += int(hi - lo + 1)
	}
	return n, err
}

// ctxWriter stops a long copy when its context ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
