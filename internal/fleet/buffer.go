package fleet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/receiptd/receiptd/internal/fileutil"
)

// Buffer file names inside the buffer's directory.
const (
	segSuffix  = ".seg"
	cursorFile = "sent"
)

// buffer is the store-and-forward queue of intervals on disk: segment
// files of records (record.go) appended in time order, and a cursor file
// naming the first record the head office has not accepted. It is safe for
// concurrent use; the push's two loops share it.
//
// Bounds: the segment files together stay under maxBytes (the oldest
// segment goes first), and records older than maxAge are dropped; every
// unsent sample dropped is counted. Only one segment file is open at a
// time (the one appended to), and every read opens and closes its own
// handle, so a segment is never deleted while open (Windows refuses that).
type buffer struct {
	dir      string
	maxBytes int64
	maxAge   int64 // milliseconds
	segBytes int64

	mu      sync.Mutex
	segs    []segment // oldest first; the last is appended to
	active  *os.File  // the last segment, open for append
	pending []recMeta // unsent records, oldest first
	bytes   int64     // size of every segment file
	samples uint64    // samples in pending
	dropped uint64    // unsent samples dropped so far
}

type segment struct {
	seq  uint64
	size int64
}

// recMeta locates one unsent record.
type recMeta struct {
	seg     uint64
	off     int64
	size    int64 // header included
	ts      int64
	samples uint32
}

// batch is a run of pending records read for one request.
type batch struct {
	recs     []recMeta
	payloads [][]byte
	samples  int
}

func (b batch) last() recMeta { return b.recs[len(b.recs)-1] }

// bufferOptions configure openBuffer.
type bufferOptions struct {
	dir      string
	maxBytes int64
	maxAge   int64 // milliseconds
}

// openBuffer opens (or creates) the buffer in dir, reading every segment:
// a record that does not decode ends its segment (the rest is cut off, and
// the file truncated when it is the last one: a torn append).
func openBuffer(o bufferOptions) (*buffer, error) {
	if err := fileutil.MkdirSynced(o.dir); err != nil {
		return nil, fmt.Errorf("fleet buffer %s: %w", o.dir, err)
	}
	b := &buffer{dir: o.dir, maxBytes: o.maxBytes, maxAge: o.maxAge,
		segBytes: max(64<<10, o.maxBytes/16)}
	seqs, err := b.list()
	if err != nil {
		return nil, err
	}
	cur := b.readCursor()
	for i, seq := range seqs {
		if err := b.load(seq, cur, i == len(seqs)-1); err != nil {
			return nil, err
		}
	}
	if len(b.segs) == 0 {
		if err := b.roll(); err != nil {
			return nil, err
		}
	} else {
		last := b.segs[len(b.segs)-1]
		f, err := os.OpenFile(b.segPath(last.seq), os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return nil, fmt.Errorf("fleet buffer: open %s: %w", b.segPath(last.seq), err)
		}
		b.active = f
	}
	b.removeSent()
	return b, nil
}

func (b *buffer) segPath(seq uint64) string {
	return filepath.Join(b.dir, fmt.Sprintf("%016x%s", seq, segSuffix))
}

// list returns the segment numbers in the directory, ascending.
func (b *buffer) list() ([]uint64, error) {
	ents, err := os.ReadDir(b.dir)
	if err != nil {
		return nil, fmt.Errorf("fleet buffer: %w", err)
	}
	var seqs []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), segSuffix)
		if !ok {
			continue
		}
		if seq, err := strconv.ParseUint(name, 16, 64); err == nil {
			seqs = append(seqs, seq)
		}
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

// cursor is the position of the first record not yet accepted.
type cursor struct {
	seg uint64
	off int64
}

func (c cursor) after(m recMeta) bool {
	return m.seg < c.seg || m.seg == c.seg && m.off < c.off
}

// readCursor reads the cursor file; a missing or unreadable one means
// "nothing sent" (the worst is a resend, which the head office takes as
// duplicates of samples it holds).
func (b *buffer) readCursor() cursor {
	data, err := os.ReadFile(filepath.Join(b.dir, cursorFile))
	if err != nil {
		return cursor{}
	}
	var c cursor
	if _, err := fmt.Sscanf(string(data), "%x %d", &c.seg, &c.off); err != nil {
		return cursor{}
	}
	return c
}

// load reads one segment, adding its unsent records to pending.
func (b *buffer) load(seq uint64, cur cursor, last bool) error {
	path := b.segPath(seq)
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("fleet buffer: read %s: %w", path, err)
	}
	off := int64(0)
	for off < int64(len(data)) {
		r, err := decodeRecord(data[off:])
		if err != nil {
			break // a torn or damaged tail: the rest is not trusted
		}
		m := recMeta{seg: seq, off: off, size: int64(r.size()), ts: r.ts, samples: r.samples}
		if !cur.after(m) {
			b.pending = append(b.pending, m)
			b.samples += uint64(r.samples)
		}
		off += m.size
	}
	if off < int64(len(data)) && last {
		if err := os.Truncate(path, off); err != nil {
			return fmt.Errorf("fleet buffer: cut the torn tail of %s: %w", path, err)
		}
	}
	b.segs = append(b.segs, segment{seq: seq, size: off})
	b.bytes += off
	return nil
}

// roll closes the active segment and starts the next one.
func (b *buffer) roll() error {
	seq := uint64(1)
	if n := len(b.segs); n > 0 {
		seq = b.segs[n-1].seq + 1
	}
	f, err := os.OpenFile(b.segPath(seq), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("fleet buffer: create segment: %w", err)
	}
	if err := fileutil.SyncDir(b.dir); err != nil {
		_ = f.Close()
		_ = os.Remove(b.segPath(seq))
		return err
	}
	if b.active != nil {
		_ = b.active.Close()
	}
	b.active = f
	b.segs = append(b.segs, segment{seq: seq})
	return nil
}

// append writes one interval's record and fsyncs it, after dropping what
// the bounds no longer allow. A failed write is cut off again, so the
// file holds whole records only.
func (b *buffer) append(r record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(r.ts)
	if b.segs[len(b.segs)-1].size+int64(r.size()) > b.segBytes && b.segs[len(b.segs)-1].size > 0 {
		if err := b.roll(); err != nil {
			return err
		}
	}
	seg := &b.segs[len(b.segs)-1]
	data := appendRecord(make([]byte, 0, r.size()), r)
	if _, err := b.active.Write(data); err != nil {
		_ = b.active.Truncate(seg.size)
		return fmt.Errorf("fleet buffer: append: %w", err)
	}
	if !fileutil.UnsafeNoSync {
		if err := b.active.Sync(); err != nil {
			return fmt.Errorf("fleet buffer: fsync: %w", err)
		}
	}
	b.pending = append(b.pending, recMeta{seg: seg.seq, off: seg.size, size: int64(len(data)), ts: r.ts, samples: r.samples})
	b.samples += uint64(r.samples)
	seg.size += int64(len(data))
	b.bytes += int64(len(data))
	b.shrink()
	return nil
}

// expire drops the pending records older than maxAge before now (Unix
// milliseconds).
func (b *buffer) expire(now int64) {
	n := 0
	for n < len(b.pending) && b.pending[n].ts < now-b.maxAge {
		n++
	}
	if n > 0 {
		b.drop(n)
		b.removeSent()
	}
}

// shrink deletes the oldest segments while the files are over maxBytes.
func (b *buffer) shrink() {
	for b.bytes > b.maxBytes && len(b.segs) > 1 {
		oldest := b.segs[0].seq
		n := 0
		for n < len(b.pending) && b.pending[n].seg == oldest {
			n++
		}
		b.drop(n)
		if err := os.Remove(b.segPath(oldest)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return // retried at the next append; the bound is overshot by one segment meanwhile
		}
		b.bytes -= b.segs[0].size
		b.segs = b.segs[1:]
	}
}

// drop removes the first n pending records, counting their samples.
func (b *buffer) drop(n int) {
	for _, m := range b.pending[:n] {
		b.dropped += uint64(m.samples)
		b.samples -= uint64(m.samples)
	}
	b.pending = append(b.pending[:0:0], b.pending[n:]...)
}

// removeSent deletes every segment but the active one that holds no
// pending record.
func (b *buffer) removeSent() {
	for len(b.segs) > 1 && (len(b.pending) == 0 || b.pending[0].seg > b.segs[0].seq) {
		if err := os.Remove(b.segPath(b.segs[0].seq)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
		b.bytes -= b.segs[0].size
		b.segs = b.segs[1:]
	}
}

// peek reads the oldest pending records, up to maxBytes of payload (at
// least one record) and maxRecords, after dropping expired ones. A record
// that no longer checks (the disk changed under it) is dropped and
// counted. An empty batch means nothing is pending.
func (b *buffer) peek(now int64, maxBytes int64, maxRecords int) (batch, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(now)
	var out batch
	var f *os.File
	var fseq uint64
	defer func() {
		if f != nil {
			_ = f.Close()
		}
	}()
	size := int64(0)
	for i := 0; i < len(b.pending) && len(out.recs) < maxRecords; i++ {
		m := b.pending[i]
		if len(out.recs) > 0 && size+m.size > maxBytes {
			break
		}
		if f == nil || fseq != m.seg {
			if f != nil {
				_ = f.Close()
			}
			var err error
			if f, err = os.Open(b.segPath(m.seg)); err != nil {
				return batch{}, fmt.Errorf("fleet buffer: %w", err)
			}
			fseq = m.seg
		}
		buf := make([]byte, m.size)
		if _, err := f.ReadAt(buf, m.off); err != nil {
			return batch{}, fmt.Errorf("fleet buffer: read %s: %w", b.segPath(m.seg), err)
		}
		r, err := decodeRecord(buf)
		if err != nil {
			b.dropAt(i)
			i--
			continue
		}
		out.recs = append(out.recs, m)
		out.payloads = append(out.payloads, r.payload)
		out.samples += int(r.samples)
		size += m.size
	}
	return out, nil
}

// dropAt drops the pending record i (counted).
func (b *buffer) dropAt(i int) {
	m := b.pending[i]
	b.dropped += uint64(m.samples)
	b.samples -= uint64(m.samples)
	b.pending = append(b.pending[:i:i], b.pending[i+1:]...)
}

// ack removes every pending record up to and including last: accepted by
// the head office, or (rejected) refused for good and counted as dropped.
// It writes the cursor file, then deletes the segments that hold nothing
// pending.
func (b *buffer) ack(last recMeta, rejected bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	upTo := cursor{last.seg, last.off + 1} // after every record up to last
	for n < len(b.pending) && upTo.after(b.pending[n]) {
		n++
	}
	if rejected {
		b.drop(n)
	} else {
		for _, m := range b.pending[:n] {
			b.samples -= uint64(m.samples)
		}
		b.pending = append(b.pending[:0:0], b.pending[n:]...)
	}
	err := b.writeCursor(cursor{last.seg, last.off + last.size})
	b.removeSent()
	return err
}

// writeCursor replaces the cursor file (fileutil.WriteFileAtomic), so it
// is either the old cursor or the new one after a power cut.
func (b *buffer) writeCursor(c cursor) error {
	err := fileutil.WriteFileAtomic(filepath.Join(b.dir, cursorFile), fmt.Appendf(nil, "%x %d\n", c.seg, c.off), 0o640)
	if err != nil {
		return fmt.Errorf("fleet buffer: cursor: %w", err)
	}
	return nil
}

// bufferStats is what the buffer holds.
type bufferStats struct {
	samples uint64 // unsent samples
	oldest  int64  // sample time of the oldest unsent record (ms); 0: none
	dropped uint64 // unsent samples dropped so far
	bytes   int64  // size of the segment files
}

func (b *buffer) stats() bufferStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := bufferStats{samples: b.samples, dropped: b.dropped, bytes: b.bytes}
	if len(b.pending) > 0 {
		s.oldest = b.pending[0].ts
	}
	return s
}

// close closes the active segment.
func (b *buffer) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.active == nil {
		return nil
	}
	err := b.active.Close()
	b.active = nil
	return err
}
