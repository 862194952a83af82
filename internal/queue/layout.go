package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
)

// Layout inside store.BucketQueue. seq is the 8-byte big-endian bucket
// sequence, so byte order is FIFO order.
//
//	entries:  seq → record (uvarint length, entry JSON without body, body bytes)
//	idem:     idempotency key → seq + body hash
//	upstream: upstream receipt id → seq (sent and payment receipts)
//	deletes:  receipt queueId, or unknown upstream id → seq of its delete entry
//	pending:  seq → next attempt time (unix ns, 8 bytes); queued and delete_queued only
//	bystate:  state 0x00 seq → empty
//	counts:   state → uint64 count
var (
	bucketEntries  = []byte("entries")
	bucketIdem     = []byte("idem")
	bucketUpstream = []byte("upstream")
	bucketDeletes  = []byte("deletes")
	bucketPending  = []byte("pending")
	bucketByState  = []byte("bystate")
	bucketCounts   = []byte("counts")
	allBuckets     = [][]byte{bucketEntries, bucketIdem, bucketUpstream, bucketDeletes,
		bucketPending, bucketByState, bucketCounts}
)

// transitions is the one table of legal state changes, per kind. Every
// change of Entry.State goes through bkts.setState, which consults it.
var transitions = map[Kind]map[State][]State{
	KindReceipt: {
		StateQueued:   {StateSending, StateCancelled},
		StateSending:  {StateSent, StatePayment, StateRejected, StateHeld, StateQueued},
		StateRejected: {StateQueued, StateCancelled},
		StatePayment:  {StateQueued},
		StateHeld:     {StateQueued},
	},
	KindDelete: {
		StateDeleteQueued:   {StateSending, StateDeleteRejected},
		StateSending:        {StateDeleted, StateDeleteRejected, StateDeleteQueued},
		StateDeleteRejected: {StateDeleteQueued},
	},
}

// Legal reports whether an entry of kind k may move from one state to another.
func Legal(k Kind, from, to State) bool {
	return slices.Contains(transitions[k][from], to)
}

func illegal(e *Entry, to State) error {
	return fmt.Errorf("%w: %s %s %s → %s", ErrIllegalTransition, e.Kind, e.QueueID, e.State, to)
}

// claimable states wait in the pending index.
func claimable(s State) bool { return s == StateQueued || s == StateDeleteQueued }

// FormatID makes a queueId from a sequence number.
func FormatID(seq uint64) string { return fmt.Sprintf("Q%012d", seq) }

// ParseID returns the sequence number of a queueId.
func ParseID(id string) (uint64, bool) {
	if len(id) != 13 || id[0] != 'Q' {
		return 0, false
	}
	n, err := strconv.ParseUint(id[1:], 10, 64)
	return n, err == nil && n > 0
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

func stateKey(s State, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(s), 0), seq)
}

// bkts holds the queue's buckets within one transaction.
type bkts struct {
	entries, idem, upstream, deletes, pending, bystate, counts *bbolt.Bucket
}

func buckets(tx *bbolt.Tx) bkts {
	root := tx.Bucket(store.BucketQueue)
	return bkts{
		entries: root.Bucket(bucketEntries), idem: root.Bucket(bucketIdem),
		upstream: root.Bucket(bucketUpstream), deletes: root.Bucket(bucketDeletes),
		pending: root.Bucket(bucketPending), bystate: root.Bucket(bucketByState),
		counts: root.Bucket(bucketCounts),
	}
}

func encode(e *Entry) ([]byte, error) {
	meta := *e
	meta.Body = nil
	js, err := json.Marshal(&meta)
	if err != nil {
		return nil, fmt.Errorf("encode entry %s: %w", e.QueueID, err)
	}
	buf := binary.AppendUvarint(make([]byte, 0, len(js)+len(e.Body)+4), uint64(len(js)))
	buf = append(buf, js...)
	return append(buf, e.Body...), nil
}

// decode copies everything out of v, which bbolt owns.
func decode(v []byte) (Entry, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return Entry{}, fmt.Errorf("decode entry: bad length prefix")
	}
	var e Entry
	if err := json.Unmarshal(v[w:w+int(n)], &e); err != nil {
		return Entry{}, fmt.Errorf("decode entry: %w", err)
	}
	if body := v[w+int(n):]; len(body) > 0 {
		e.Body = bytes.Clone(body)
	}
	return e, nil
}

func (b bkts) load(seq uint64) (Entry, error) {
	v := b.entries.Get(seqKey(seq))
	if v == nil {
		return Entry{}, fmt.Errorf("%w: %s", ErrNotFound, FormatID(seq))
	}
	return decode(v)
}

func (b bkts) loadID(id string) (Entry, uint64, error) {
	seq, ok := ParseID(id)
	if !ok {
		return Entry{}, 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	e, err := b.load(seq)
	return e, seq, err
}

func (b bkts) write(seq uint64, e *Entry) error {
	rec, err := encode(e)
	if err != nil {
		return err
	}
	return b.entries.Put(seqKey(seq), rec)
}

func (b bkts) addCount(s State, d int64) error {
	var n int64
	if v := b.counts.Get([]byte(s)); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	n += d
	if n < 0 {
		return fmt.Errorf("count of %s would go negative", s)
	}
	return b.counts.Put([]byte(s), binary.BigEndian.AppendUint64(nil, uint64(n)))
}

func (b bkts) putPending(seq uint64, at time.Time) error {
	var ns int64
	if !at.IsZero() {
		ns = at.UnixNano()
	}
	return b.pending.Put(seqKey(seq), binary.BigEndian.AppendUint64(nil, uint64(ns)))
}

// insert stores a new entry and its state's index rows.
func (b bkts) insert(seq uint64, e *Entry) error {
	if err := b.write(seq, e); err != nil {
		return err
	}
	if err := b.bystate.Put(stateKey(e.State, seq), nil); err != nil {
		return err
	}
	if claimable(e.State) {
		if err := b.putPending(seq, e.NextAttemptAt); err != nil {
			return err
		}
	}
	return b.addCount(e.State, 1)
}

// setState is the only place an entry's state changes: it checks the
// transition table, then moves the index rows and counters with it and
// writes the entry.
func (b bkts) setState(e *Entry, to State, now time.Time) error {
	if !Legal(e.Kind, e.State, to) {
		return illegal(e, to)
	}
	seq, ok := ParseID(e.QueueID)
	if !ok {
		return fmt.Errorf("set state: bad queueId %q", e.QueueID)
	}
	from := e.State
	if err := b.bystate.Delete(stateKey(from, seq)); err != nil {
		return err
	}
	if err := b.bystate.Put(stateKey(to, seq), nil); err != nil {
		return err
	}
	if err := b.addCount(from, -1); err != nil {
		return err
	}
	if err := b.addCount(to, 1); err != nil {
		return err
	}
	if !claimable(to) {
		e.NextAttemptAt = time.Time{}
		if err := b.pending.Delete(seqKey(seq)); err != nil {
			return err
		}
	} else if err := b.putPending(seq, e.NextAttemptAt); err != nil {
		return err
	}
	e.State, e.UpdatedAt = to, now
	return b.write(seq, e)
}

// seqsInState lists the sequence numbers in state s, oldest first; limit 0
// means all.
func (b bkts) seqsInState(s State, limit int) []uint64 {
	prefix := append([]byte(s), 0)
	var out []uint64
	c := b.bystate.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, binary.BigEndian.Uint64(k[len(prefix):]))
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// remove deletes a finished entry with every index row that points at it.
func (b bkts) remove(seq uint64, e *Entry) error {
	key := seqKey(seq)
	dropIfPointsHere := func(bk *bbolt.Bucket, k string) error {
		if k == "" {
			return nil
		}
		if v := bk.Get([]byte(k)); len(v) >= 8 && bytes.Equal(v[:8], key) {
			return bk.Delete([]byte(k))
		}
		return nil
	}
	ops := []error{
		dropIfPointsHere(b.idem, e.IdemKey),
		dropIfPointsHere(b.deletes, e.DeleteTarget),
		dropIfPointsHere(b.deletes, e.DeleteID),
		b.bystate.Delete(stateKey(e.State, seq)),
		b.pending.Delete(key),
		b.addCount(e.State, -1),
		b.entries.Delete(key),
	}
	if e.Outcome != nil {
		ops = append(ops, dropIfPointsHere(b.upstream, e.Outcome.ID))
	}
	for _, err := range ops {
		if err != nil {
			return fmt.Errorf("remove %s: %w", e.QueueID, err)
		}
	}
	return nil
}
