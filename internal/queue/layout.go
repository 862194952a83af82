package queue

import (
	"bytes"
	"encoding/binary"
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
//	pending:  seq → next attempt time (unix ns, 8 bytes) and, when set, the time it was set
//	          (8 more); queued and delete_queued only
//	bystate:  state 0x00 seq → empty
//	counts:   state → uint64 count
//	indexed:  (a key of the queue bucket itself) the highest seq with index rows
//
// # The unindexed tail
//
// Enqueue writes only what its promise needs: the entry and its idempotency
// row. The entries after indexed, up to the entries bucket's sequence, are
// the tail: receipts in state queued, claimable at once, with no bystate,
// pending or counts rows. Readers add the tail to what the indexes say.
// Claim indexes the oldest max(limit, Options.TailIndexBatch) tail entries before
// it picks, so a long tail (a day offline) is indexed a slice per claim,
// never in one large transaction. A delete request needs the whole tail
// indexed (it may cancel a tail entry, and its own entry must come after
// the tail), so it indexes long tails in slices of their own commits first.
// setState refuses tail entries, so nothing can skip this step.
//
// Why: each index lives in its own B+tree, so each costs a leaf page and
// its branch pages in every commit that touches it. Skipping three of them
// makes an enqueue commit write about 9 pages instead of 13, which is what
// brings its latency close to a one-value bbolt Update (docs/performance.md);
// the claim that follows pays for them off the POS's path.
// The tail is contiguous by construction: seqs come only from NextSequence
// in a transaction that writes the entry, Prune removes finished entries
// only, and insert (the indexed path) indexes the tail before it writes.
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
	keyIndexed = []byte("indexed")
)

// transitions is the one table of legal state changes, per kind. Every
// change of Entry.State goes through bkts.setState, which consults it.
var transitions = map[Kind]map[State][]State{
	KindReceipt: {
		StateQueued:   {StateSending, StateCancelled, StateHeld}, // held: HoldRestored
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

// putUpstream writes e's upstream row (the tax service's id → seq) when e
// is a receipt the tax service issued with an id (sent or payment).
func (b bkts) putUpstream(seq uint64, e *Entry) error {
	if e.Kind != KindReceipt || (e.State != StateSent && e.State != StatePayment) || e.Outcome == nil || e.Outcome.ID == "" {
		return nil
	}
	return b.upstream.Put([]byte(e.Outcome.ID), seqKey(seq))
}

// claimable states wait in the pending index.
func claimable(s State) bool { return s == StateQueued || s == StateDeleteQueued }

// FormatID makes a queueId from a sequence number.
func FormatID(seq uint64) string {
	// As fmt.Sprintf("Q%012d", seq), without its reflection: a queueId
	// is made for every receipt.
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], seq, 10)
	id := make([]byte, 0, 1+max(12, len(d)))
	id = append(id, 'Q')
	for range 12 - len(d) {
		id = append(id, '0')
	}
	return string(append(id, d...))
}

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
	root                                                       *bbolt.Bucket
	entries, idem, upstream, deletes, pending, bystate, counts *bbolt.Bucket
	// keys is the queue's filter of the file's idempotency keys, which
	// putIdem adds to: set by Queue.update, the one way this package
	// writes the file's rows (keyfilter.go).
	keys *keyFilter
}

// appendFill is the fill percent of the buckets keyed by seq (entries,
// pending), whose new keys always come last. bbolt splits a page once it
// is FillPercent full, by default half: on append-only keys the left
// half is never written again, so the entries bucket's pages stayed about
// half full. An entry then grows when it is sent (its attempt and outcome,
// about 290 bytes), and the page must have room for that: at 0.9 a page
// took 4 of the bench's queued receipts (818 bytes each), and once sent
// they no longer fit; bbolt never splits a node of 4 keys or fewer, so
// the page overflowed into two (half the entries' leaf pages of the year
// step, 55% full). At 0.7 a page takes 3, 87% full once sent
// (TestEntriesPagesAreFilled). The idempotency index keeps bbolt's
// default: a POS's own keys may come in any order, and on random keys 0.9
// leaves its pages about 36% full against 68% at 0.5 (measured with
// 20,000 random keys). FillPercent is not stored in the file, so buckets
// sets it on every write transaction.
const appendFill = 0.7

func buckets(tx *bbolt.Tx) bkts {
	root := tx.Bucket(store.BucketQueue)
	b := bkts{
		root: root, entries: root.Bucket(bucketEntries), idem: root.Bucket(bucketIdem),
		upstream: root.Bucket(bucketUpstream), deletes: root.Bucket(bucketDeletes),
		pending: root.Bucket(bucketPending), bystate: root.Bucket(bucketByState),
		counts: root.Bucket(bucketCounts),
	}
	if tx.Writable() {
		b.entries.FillPercent, b.pending.FillPercent = appendFill, appendFill
	}
	return b
}

func (b bkts) load(seq uint64) (Entry, error) {
	v := b.entries.Get(seqKey(seq))
	if v == nil {
		return Entry{}, fmt.Errorf("%w: %s", ErrNotFound, FormatID(seq))
	}
	return decode(v)
}

// each loads the entries seqs name, in that order, and calls fn with
// each; it stops at the first error.
func (b bkts) each(seqs []uint64, fn func(e *Entry) error) error {
	for _, seq := range seqs {
		e, err := b.load(seq)
		if err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	return nil
}

// eachInState is each over the entries seqsInState names: fn may change
// an entry's state, as the index is read before the first call.
func (b bkts) eachInState(s State, after uint64, limit int, fn func(e *Entry) error) (int, error) {
	seqs, err := b.seqsInState(s, after, limit)
	if err != nil {
		return 0, err
	}
	return len(seqs), b.each(seqs, fn)
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

// putPending writes seq's row in the pending index: the next attempt time
// (unix ns, 8 bytes), then, when there is one, the time it was set (8
// more). due reads both.
func (b bkts) putPending(seq uint64, at, setAt time.Time) error {
	return b.pending.Put(seqKey(seq), pendingRow(at, setAt))
}

// pendingRow is the pending index's row of an entry due at at, set at setAt.
func pendingRow(at, setAt time.Time) []byte {
	if at.IsZero() {
		return make([]byte, 8)
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano()))
	return binary.BigEndian.AppendUint64(v, uint64(setAt.UnixNano()))
}

// due reports whether a pending row lets its entry be claimed at now: its
// next attempt time has come, or now is more than clockSlack before the
// time that next attempt was set, which means the clock was put back since (a till's clock
// corrected after start-up) and the wait would last as long as the
// correction. Rows of schema 1 carry the next attempt time only.
func due(v []byte, now time.Time) bool {
	if len(v) < 8 {
		return true
	}
	ns := now.UnixNano()
	if int64(binary.BigEndian.Uint64(v)) <= ns {
		return true
	}
	return len(v) >= 16 && int64(binary.BigEndian.Uint64(v[8:])) > ns+int64(clockSlack)
}

// clockSlack is how far before the time a backoff was set a claim's now
// may be without counting as a clock put back: a claim reads its clock
// before it joins a group commit, which may first run another slot's
// finish that sets a backoff a moment later.
const clockSlack = time.Minute

// indexed returns the highest seq whose index rows exist.
func (b bkts) indexed() (uint64, error) {
	v := b.root.Get(keyIndexed)
	if len(v) != 8 {
		return 0, fmt.Errorf("queue index mark is damaged (%d bytes, want 8)", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// tail returns the unindexed entries' seqs, lo through hi; empty when lo > hi.
func (b bkts) tail() (lo, hi uint64, err error) {
	n, err := b.indexed()
	return n + 1, b.entries.Sequence(), err
}

// tailSeqs lists the tail's seqs after after, oldest first (newest first
// with reverse), at most limit of them; limit 0 means all.
func (b bkts) tailSeqs(after uint64, limit int, reverse bool) ([]uint64, error) {
	lo, hi, err := b.tail()
	if err != nil {
		return nil, err
	}
	lo = max(lo, after+1)
	var out []uint64
	for i := uint64(0); lo+i <= hi && (limit <= 0 || len(out) < limit); i++ {
		if reverse {
			out = append(out, hi-i)
		} else {
			out = append(out, lo+i)
		}
	}
	return out, nil
}

// appendQueued stores a new queued receipt in the tail: no index rows.
func (b bkts) appendQueued(seq uint64, e *Entry) error {
	if e.State != StateQueued || e.Kind != KindReceipt || !e.NextAttemptAt.IsZero() {
		return fmt.Errorf("append %s: only a queued receipt, claimable now, may join the tail", e.QueueID)
	}
	return b.write(seq, e)
}

// indexTail gives the oldest tail entries, at most limit of them (limit 0
// means all), their index rows (state queued, claimable now) and moves the
// mark past them.
func (b bkts) indexTail(limit int) error {
	lo, hi, err := b.tail()
	if err != nil || lo > hi {
		return err
	}
	if limit > 0 {
		hi = min(hi, lo+uint64(limit)-1)
	}
	for seq := lo; seq <= hi; seq++ {
		if err := b.bystate.Put(stateKey(StateQueued, seq), nil); err != nil {
			return err
		}
		if err := b.putPending(seq, time.Time{}, time.Time{}); err != nil {
			return err
		}
	}
	if err := b.addCount(StateQueued, int64(hi-lo+1)); err != nil {
		return err
	}
	return b.root.Put(keyIndexed, seqKey(hi))
}

// indexSending gives the entry just written at seq, the newest and the
// only one of the tail, in state sending (its claim made by the accept),
// its index rows, and moves the mark to it.
func (b bkts) indexSending(seq uint64) error {
	if lo, hi, err := b.tail(); err != nil || lo != seq || hi != seq {
		return fmt.Errorf("index %s: unindexed entries %d–%d are in the way (%v)", FormatID(seq), lo, hi, err)
	}
	if err := b.bystate.Put(stateKey(StateSending, seq), nil); err != nil {
		return err
	}
	if err := b.addCount(StateSending, 1); err != nil {
		return err
	}
	return b.root.Put(keyIndexed, seqKey(seq))
}

// insert stores a new entry with its index rows. seq must be the only
// member of the tail, so callers run indexTail before NextSequence.
func (b bkts) insert(seq uint64, e *Entry) error {
	if lo, hi, err := b.tail(); err != nil || lo != seq || hi != seq {
		return fmt.Errorf("insert %s: unindexed entries %d–%d are in the way (%v)", e.QueueID, lo, hi, err)
	}
	if err := b.putIndexed(seq, e); err != nil {
		return err
	}
	return b.root.Put(keyIndexed, seqKey(seq))
}

// putIndexed writes entry e at seq with its rows: its state index, its
// pending row when it is claimable, and its state's counter.
func (b bkts) putIndexed(seq uint64, e *Entry) error {
	if err := b.write(seq, e); err != nil {
		return err
	}
	if err := b.bystate.Put(stateKey(e.State, seq), nil); err != nil {
		return err
	}
	if claimable(e.State) {
		if err := b.putPending(seq, e.NextAttemptAt, e.UpdatedAt); err != nil {
			return err
		}
	}
	if err := b.addCount(e.State, 1); err != nil {
		return err
	}
	return nil
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
	if n, err := b.indexed(); err != nil || seq > n {
		return fmt.Errorf("set state of %s: it is in the unindexed tail; index the tail first (%v)", e.QueueID, err)
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
	} else if err := b.putPending(seq, e.NextAttemptAt, now); err != nil {
		return err
	}
	e.State, e.UpdatedAt = to, now
	return b.write(seq, e)
}

// seqsInState lists the seqs in state s after after, oldest first, at
// most limit of them; limit 0 means all. Queued includes the tail.
func (b bkts) seqsInState(s State, after uint64, limit int) ([]uint64, error) {
	prefix := append([]byte(s), 0)
	var out []uint64
	c := b.bystate.Cursor()
	for k, _ := c.Seek(stateKey(s, after+1)); k != nil && bytes.HasPrefix(k, prefix) && (limit <= 0 || len(out) < limit); k, _ = c.Next() {
		out = append(out, binary.BigEndian.Uint64(k[len(prefix):]))
	}
	if s != StateQueued || (limit > 0 && len(out) == limit) {
		return out, nil
	}
	tail, err := b.tailSeqs(after, limit-len(out), false)
	return append(out, tail...), err
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
