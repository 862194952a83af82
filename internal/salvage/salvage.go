package salvage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/wal"
)

// Report says what Read and AddLog found, and what they could not read.
type Report struct {
	PageSize   int    // bytes; the meta page's, or 4096 when neither meta page holds
	Pages      uint64 // pages the file holds
	Meta       int    // the meta page used: 0 or 1; -1 when neither checksum holds
	TxID       uint64 // the transaction of that meta page
	TreePages  int    // pages read through the tree
	Unreadable int    // pages the tree points at that are damaged, misplaced or past the end of the file
	LostRanges int    // key ranges of the entries bucket that the tree could not give
	Scanned    int    // leaf pages outside the tree read for entries of those ranges
	FreePages  int    // pages in bbolt's freelist
	FreelistOK bool   // the freelist page could be read
	FromTree   int    // entries read through the tree
	FromScan   int    // entries read from pages outside the tree
	// Undecodable counts records in an entry's place in the tree that did
	// not decode as a valid entry: lost, never guessed.
	Undecodable int
	// BadBody counts recovered receipts whose body does not match the hash
	// stored with it: kept, but the sync worker never sends such a body.
	BadBody int
	// IdemRows counts the idempotency rows read through the tree, and
	// OrphanKeys those among them whose entry was not recovered: a POS
	// retry under one of those keys is taken as a new receipt.
	IdemRows, OrphanKeys int

	LogSegments    int  // segment files of the write-ahead log
	LogDamaged     int  // segments whose header is damaged: none of their records is read
	LogForeign     int  // segments of another database's log, left out
	LogRecords     int  // valid records read from the log
	LogUndecodable int  // records that did not decode as a new queued receipt
	FromLog        int  // entries the file did not hold, added from the log
	LogIDKnown     bool // the database still names its log
	SequenceKnown  bool // the entries bucket's sequence was read
}

// DB is what Read recovered.
type DB struct {
	// Sequence is the highest queueId number the database had given, as
	// far as anything read says (the entries bucket's sequence, the
	// highest entry or log record): the rebuilt queue continues after it,
	// so no queueId of a lost entry is given again.
	Sequence uint64
	// LogID is the write-ahead log's id the database names (LogIDKnown).
	LogID uint64
	Report

	cands map[uint64]candidate
	idem  map[string]uint64 // idempotency rows read through the tree: key → seq
}

// candidate is one copy of an entry and where it came from.
type candidate struct {
	e         queue.Entry
	tree      bool // read through the tree: the current copy
	free      bool // on a page in bbolt's freelist
	log       bool // from the write-ahead log
	hashFails bool
}

// better reports whether a is the copy to keep rather than b.
func better(a, b candidate) bool {
	switch {
	case a.tree != b.tree:
		return a.tree
	case !a.e.UpdatedAt.Equal(b.e.UpdatedAt):
		return a.e.UpdatedAt.After(b.e.UpdatedAt)
	case history(a.e) != history(b.e):
		return history(a.e) > history(b.e)
	case a.hashFails != b.hashFails:
		return !a.hashFails
	case a.free != b.free:
		return !a.free
	}
	return !a.log && b.log
}

func history(e queue.Entry) int { return len(e.Attempts) + e.AttemptsDropped }

var (
	keyQueue   = "queue"
	keyEntries = "entries"
	keyIdem    = "idem"
	keyLogID   = "logId"
)

// Read recovers the entries of the bbolt file r of size bytes. It fails
// only when r cannot be read at all; a file too damaged to hold anything
// gives an empty DB and a Report saying why.
func Read(r io.ReaderAt, size int64) (*DB, error) {
	db := &DB{cands: map[uint64]candidate{}}
	f, m, err := openFile(r, size, &db.Report)
	if err != nil {
		return nil, err
	}
	free := map[uint64]bool{}
	if m != nil && m.freelist < f.pages {
		if b, _, ok := f.read(m.freelist); ok {
			ids, ok := freelistIDs(b)
			db.FreelistOK = ok
			for _, id := range ids {
				free[id] = true
			}
			db.FreePages = len(free)
		}
	}
	w := &walker{f: f, seen: map[uint64]bool{}}
	var lost []keyRange
	idem := map[string]uint64{}
	if m == nil {
		lost = append(lost, keyRange{})
	} else {
		lost = db.walkTree(w, m.root, idem)
	}
	db.TreePages = len(w.seen)
	db.Unreadable = w.unreadable
	db.LostRanges = len(lost)
	if len(lost) > 0 {
		db.scan(f, w.seen, free, lost)
	}
	db.idem, db.IdemRows = idem, len(idem)
	for seq := range db.cands {
		db.Sequence = max(db.Sequence, seq)
	}
	return db, nil
}

// openFile finds the page size and the meta page to trust.
func openFile(r io.ReaderAt, size int64, rep *Report) (*file, *meta, error) {
	rep.Meta, rep.PageSize = -1, 4096
	head := make([]byte, pageHeaderSize+metaSize)
	if size < int64(len(head)) {
		return &file{r: r, size: size, ps: rep.PageSize}, nil, nil
	}
	if _, err := r.ReadAt(head, 0); err != nil {
		return nil, nil, fmt.Errorf("salvage: read the first meta page: %w", err)
	}
	var best *meta
	if m, ok := decodeMeta(head); ok && validPageSize(m.pageSize) {
		best, rep.Meta = &m, 0
	}
	sizes := []uint32{4096, 8192, 16384, 32768, 65536, 1024, 2048}
	if best != nil {
		sizes = []uint32{best.pageSize}
	}
	for _, ps := range sizes {
		if int64(ps)+int64(len(head)) > size {
			continue
		}
		if _, err := r.ReadAt(head, int64(ps)); err != nil {
			return nil, nil, fmt.Errorf("salvage: read the second meta page: %w", err)
		}
		if m, ok := decodeMeta(head); ok && m.pageSize == ps && (best == nil || m.txid > best.txid) {
			best, rep.Meta = &m, 1
			break
		}
	}
	f := &file{r: r, size: size, ps: rep.PageSize}
	if best != nil {
		f.ps, rep.PageSize, rep.TxID = int(best.pageSize), int(best.pageSize), best.txid
	}
	f.pages = uint64(size) / uint64(f.ps)
	rep.Pages = f.pages
	if best != nil {
		f.pages = min(f.pages, best.pgid)
	}
	return f, best, nil
}

func validPageSize(ps uint32) bool { return ps >= 512 && ps <= 1<<20 && ps&(ps-1) == 0 }

// walkTree reads the queue's entries and idempotency rows through the
// tree rooted at page root, and returns the key ranges of the entries
// bucket it could not read.
func (db *DB) walkTree(w *walker, root uint64, idem map[string]uint64) []keyRange {
	all := []keyRange{{}}
	var lost []keyRange
	collect := func(els *[]elem) func(elem) { return func(el elem) { *els = append(*els, el) } }
	var top, qels []elem
	w.bucket(inBucket{root: root}, collect(&top), func(keyRange) {})
	qb, ok := childBucket(top, keyQueue)
	if !ok {
		return all
	}
	w.bucket(qb, collect(&qels), func(keyRange) {})
	if v, ok := child(qels, keyLogID); ok && len(v.value) == 8 && !v.bucket {
		db.LogID, db.LogIDKnown = binary.BigEndian.Uint64(v.value), true
	}
	if ib, ok := childBucket(qels, keyIdem); ok {
		w.bucket(ib, func(el elem) {
			if len(el.value) >= 8 && !el.bucket {
				idem[string(el.key)] = binary.BigEndian.Uint64(el.value)
			}
		}, func(keyRange) {})
	}
	eb, ok := childBucket(qels, keyEntries)
	if !ok {
		return all
	}
	db.Sequence, db.SequenceKnown = eb.sequence, true
	w.bucket(eb, func(el elem) {
		if c, ok := entryOf(el); ok {
			c.tree = true
			db.cands[seqOf(el.key)] = c
			db.FromTree++
			return
		}
		db.Undecodable++
		lost = append(lost, keyRange{lo: el.key, hi: append(bytes.Clone(el.key), 0)})
	}, func(r keyRange) { lost = append(lost, r) })
	return lost
}

// scan reads every page outside the tree for entries in the lost ranges.
func (db *DB) scan(f *file, seen, free map[uint64]bool, lost []keyRange) {
	inLost := func(k []byte) bool {
		return slices.ContainsFunc(lost, func(r keyRange) bool { return r.has(k) })
	}
	var harvest func(els []elem, isFree bool)
	harvest = func(els []elem, isFree bool) {
		for _, el := range els {
			if el.bucket && string(el.key) == keyEntries {
				if b, ok := decodeBucket(el.value); ok {
					db.Sequence = max(db.Sequence, b.sequence)
					if b.root == 0 { // an inline entries bucket: its page is in the value
						_, inl, _, _ := decodeElems(b.inline, false)
						harvest(inl, isFree)
					}
				}
				continue
			}
			if el.bucket || len(el.key) != 8 || !inLost(el.key) {
				continue
			}
			c, ok := entryOf(el)
			if !ok {
				continue
			}
			c.free = isFree
			seq := seqOf(el.key)
			if old, had := db.cands[seq]; !had || better(c, old) {
				if !had {
					db.FromScan++
				}
				db.cands[seq] = c
			}
		}
	}
	for id := uint64(2); id < f.pages; id++ {
		if seen[id] {
			continue
		}
		b, h, ok := f.read(id)
		if !ok || h.flags != flagLeaf {
			continue
		}
		_, els, _, _ := decodeElems(b, false)
		db.Scanned++
		harvest(els, free[id])
	}
}

func seqOf(k []byte) uint64 { return binary.BigEndian.Uint64(k) }

// entryOf decodes a leaf element as an entry and validates it.
func entryOf(el elem) (candidate, bool) {
	if el.bucket || len(el.key) != 8 {
		return candidate{}, false
	}
	e, err := queue.DecodeRecord(el.value)
	if err != nil || !valid(seqOf(el.key), &e) {
		return candidate{}, false
	}
	return candidate{e: e, hashFails: e.Kind == queue.KindReceipt && receipt.Fingerprint(e.Body) != e.BodyHash}, true
}

var statesOf = map[queue.Kind][]queue.State{
	queue.KindReceipt: {queue.StateQueued, queue.StateSending, queue.StateSent, queue.StatePayment,
		queue.StateRejected, queue.StateHeld, queue.StateCancelled},
	queue.KindDelete: {queue.StateDeleteQueued, queue.StateSending, queue.StateDeleted, queue.StateDeleteRejected},
}

// valid reports whether e, decoded from the record under key seq, is an
// entry the queue could have written there.
func valid(seq uint64, e *queue.Entry) bool {
	id, ok := queue.ParseID(e.QueueID)
	if !ok || id != seq || !slices.Contains(statesOf[e.Kind], e.State) || e.AcceptedAt.IsZero() || e.UpdatedAt.IsZero() {
		return false
	}
	if e.Kind == queue.KindReceipt {
		return e.IdemKey != "" && e.BodyHash != "" && len(e.Body) > 0
	}
	return e.DeleteTarget != "" || e.DeleteID != ""
}

// AddLog adds the receipts of the write-ahead log's segments that the file
// did not hold. Segments of another log than the database's (when the
// database still names its log) are left out.
func (db *DB) AddLog(segs []wal.Segment) {
	db.LogSegments = len(segs)
	for _, s := range segs {
		switch {
		case s.Err != nil:
			db.LogDamaged++
			continue
		case db.LogIDKnown && s.ID != db.LogID:
			db.LogForeign++
			continue
		}
		for _, r := range s.Records {
			db.LogRecords++
			e, err := queue.DecodeLogRecord(r)
			if err != nil {
				db.LogUndecodable++
				continue
			}
			seq, _ := queue.ParseID(e.QueueID)
			db.Sequence = max(db.Sequence, seq)
			if old, ok := db.cands[seq]; ok && !finishes(e, old.e) {
				continue
			}
			db.cands[seq] = candidate{e: e, log: true, hashFails: receipt.Fingerprint(e.Body) != e.BodyHash}
			db.FromLog++
		}
	}
}

// finishes reports whether e, from an outcome record of the log, is the
// end of the attempt that left old in sending: one attempt more. An
// outcome the file already applied (and whose entry went on since) is
// not newer than the file's copy.
func finishes(e, old queue.Entry) bool {
	return old.State == queue.StateSending && e.State != queue.StateSending &&
		len(e.Attempts)+e.AttemptsDropped > len(old.Attempts)+old.AttemptsDropped
}

// Entries returns the recovered entries in queueId order. It counts the
// receipts among them whose body fails its hash (BadBody), and the
// idempotency rows whose entry is not among them (OrphanKeys).
func (db *DB) Entries() []queue.Entry {
	db.OrphanKeys = 0
	for _, seq := range db.idem {
		if _, ok := db.cands[seq]; !ok {
			db.OrphanKeys++
		}
	}
	seqs := make([]uint64, 0, len(db.cands))
	for seq := range db.cands {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	out := make([]queue.Entry, 0, len(seqs))
	db.BadBody = 0
	for _, seq := range seqs {
		c := db.cands[seq]
		if c.hashFails {
			db.BadBody++
		}
		out = append(out, c.e)
	}
	return out
}
