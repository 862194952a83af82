package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/receiptd/receiptd/internal/fileutil"
)

// Options configures Open. The zero value is ready to use.
type Options struct {
	// SegmentSize is the size of each segment file in bytes. Zero means
	// DefaultSegmentSize. A record larger than a segment can hold is
	// ErrTooLarge.
	SegmentSize int64
}

// Log is an open write-ahead log. It is safe for concurrent use.
type Log struct {
	dir     string
	id      uint64
	segSize int64

	mu      sync.Mutex
	next    uint64  // LSN of the next Append
	segNext uint64  // first LSN of the segment the next record goes to, if it fits
	pending []batch // appended, not yet taken by a flush
	free    int64   // room left in the segment the newest pending record goes to
	// spareReady: a spare segment file exists and is promised to nobody.
	// rollPending: a pending batch has been promised the spare.
	spareReady, rollPending bool
	flushing                bool
	waiting                 int      // callers of Sync waiting for a flush to end
	spareBufs               [][]byte // flushed batches' buffers, for the next batches (keptBufs at most)
	durable                 uint64
	written                 uint64 // every record up to it is in the file (durable once flushed)
	failed                  error
	closed                  bool
	flushed                 chan struct{} // closed and replaced after every flush
	flushes, records        uint64        // Stats
	yields                  uint64        // flushes that yielded to other callers first (tests)
	full                    error         // why the last spare could not be made for want of space (ensureSpare)
	fullSince               time.Time     // when the run of such failures began

	// fileMu serializes what changes the directory: rolls, spares, trims.
	fileMu     sync.Mutex
	sparesMade int       // spares written as zeros (createSpare), under fileMu
	cur        *os.File  // the segment being written; only the flushing caller uses it
	curOff     int64     // where the next byte goes in cur
	old        []segFile // segments before cur, oldest first (fileMu)
	curSeg     segFile   // cur's name and first LSN (fileMu)
}

// batch is records bound for one segment: the current one, or, when roll
// is set, a new one beginning at first.
type batch struct {
	roll  bool
	first uint64
	last  uint64
	data  []byte
}

const spareName = "spare"

// reserves is how many trimmed segments are kept beside the spare, named
// spareName-1 and on, to become the spare in turn: a burst of sales
// fills several segments before its records are applied and trimmed
// (queue.ApplyLoop waits for a quiet till), and the next burst then
// renames a kept segment where it would write a megabyte of zeros and
// fdatasync it. A few megabytes of disk that stays taken.
const reserves = 4

// maxSpareBuf bounds a batch buffer a flush keeps for the next batches:
// a burst's large buffer is let go.
const maxSpareBuf = 256 << 10

// keptBufs is how many flushed batches' buffers the log keeps: one being
// filled while the other is written.
const keptBufs = 2

// Open opens the log in dir (created if missing) for the database whose
// log id is id, and returns every record after the LSN after, in order.
// Appends continue after the newest record (or after, if greater) in a new
// segment. Errors: ErrCorrupt (a gap, a damaged header, another id),
// ErrDiskFull, or the file system's.
func Open(dir string, id, after uint64, opts Options) (*Log, []Record, error) {
	l := &Log{dir: dir, id: id, segSize: opts.SegmentSize, flushed: make(chan struct{})}
	if l.segSize <= 0 {
		l.segSize = DefaultSegmentSize
	}
	if err := fileutil.MkdirSynced(dir); err != nil {
		return nil, nil, fmt.Errorf("open write-ahead log %s: %w", dir, err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, nil, err
	}
	recs, last, err := readAll(segs, id, after)
	if err != nil {
		return nil, nil, err
	}
	// A process killed between a write and its flush (SyncWithin) left
	// records in the newest segment that only the kernel holds: they are
	// read as any other, so flush them before a new segment is named
	// after them; else a power cut soon
	// after could take them and leave the new segment behind a gap.
	if last > 0 && len(segs) > 0 {
		if err := syncFile(segs[len(segs)-1].path); err != nil {
			return nil, nil, fmt.Errorf("open write-ahead log %s: %w", dir, err)
		}
	}
	l.next = max(after, last) + 1
	l.durable = l.next - 1
	l.written = l.durable
	l.old = segs
	// A segment already named after l.next holds no valid record (or
	// l.next would be past it): the new one takes its name.
	for i, s := range l.old {
		if s.first == l.next {
			l.old = append(l.old[:i:i], l.old[i+1:]...)
			break
		}
	}
	l.curSeg = segFile{first: l.next} // what Trim counts the newest old segment's records up to
	// Segments wholly at or before after are no longer needed: one becomes
	// the spare, so a full disk does not keep the log from opening.
	_ = l.Trim(after)
	err = l.ensureSpare()
	if errors.Is(err, ErrDiskFull) {
		// Start without a segment: appends are ErrDiskFull until a trim
		// (once the database applies what is here) makes a spare, and
		// the daemon starts, sending what is queued.
		return l, recs, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := l.roll(l.next); err != nil {
		return nil, nil, err
	}
	l.spareReady, l.free, l.segNext = false, l.segSize-headerSize, l.next
	return l, recs, nil
}

// syncFile flushes the file at path to disk.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = datasync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("flush %s: %w", path, err)
	}
	return nil
}

// readAll reads the segments that may hold records after after and
// returns those records, checking that they follow after with no gap, and
// the LSN of the newest valid record (0 when none).
func readAll(segs []segFile, id, after uint64) ([]Record, uint64, error) {
	var out []Record
	expect, last := after+1, uint64(0)
	started := false
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].first <= after+1 {
			continue // every record of s is at or before after
		}
		if started && s.first != expect || !started && s.first > expect {
			return nil, 0, fmt.Errorf("%w: segment %s begins at record %d, but record %d comes next: a segment is missing",
				ErrCorrupt, s.path, s.first, expect)
		}
		started = true
		data, err := os.ReadFile(s.path)
		if err != nil {
			return nil, 0, fmt.Errorf("read write-ahead log segment %s: %w", s.path, err)
		}
		recs, err := readSegment(s.path, data, id, s.first)
		if err != nil {
			return nil, 0, err
		}
		for _, r := range recs {
			last = r.LSN
			if r.LSN > after {
				out = append(out, r)
			}
		}
		expect = max(expect, s.first+uint64(len(recs)))
	}
	return out, last, nil
}

// Append adds a record and returns its LSN. It does not wait for the disk:
// Sync does. Records are durable in LSN order. Errors: ErrTooLarge,
// ErrFailed, ErrClosed, and ErrDiskFull when a new segment is needed and
// cannot be made (nothing is appended then).
func (l *Log) Append(data []byte) (uint64, error) {
	need := int64(recHeader + len(data))
	if len(data) == 0 { // length 0 marks the end of a segment's records
		return 0, fmt.Errorf("append to %s: an empty record", l.dir)
	}
	if need > l.segSize-headerSize {
		return 0, fmt.Errorf("append to %s: %w: %d bytes", l.dir, ErrTooLarge, len(data))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if err := l.usableLocked(); err != nil {
			return 0, err
		}
		if need <= l.free {
			break
		}
		if l.rollPending { // one roll at a time: flush the one promised
			target := l.next - 1
			if err := l.unlocked(func() error { return l.Sync(context.Background(), target) }); err != nil {
				return 0, err
			}
			continue
		}
		if !l.spareReady {
			if err := l.unlocked(l.ensureSpare); err != nil {
				return 0, fmt.Errorf("append to %s: %w", l.dir, err)
			}
			continue
		}
		l.spareReady, l.rollPending = false, true
		l.pending = append(l.pending, batch{roll: true, first: l.next, data: l.takeSpareBuf()})
		l.free, l.segNext = l.segSize-headerSize, l.next
	}
	lsn := l.next
	l.next++
	l.free -= need
	if len(l.pending) == 0 {
		l.pending = append(l.pending, batch{first: lsn, data: l.takeSpareBuf()})
	}
	b := &l.pending[len(l.pending)-1]
	b.data = appendRecord(b.data, l.segNext, lsn, data)
	b.last = lsn
	return lsn, nil
}

// takeSpareBuf returns a flushed batch's buffer, emptied, or nil; mu
// held.
func (l *Log) takeSpareBuf() []byte {
	n := len(l.spareBufs)
	if n == 0 {
		return nil
	}
	buf := l.spareBufs[n-1]
	l.spareBufs = l.spareBufs[:n-1]
	return buf
}

// unlocked runs fn with l.mu released.
func (l *Log) unlocked(fn func() error) error {
	l.mu.Unlock()
	defer l.mu.Lock()
	return fn()
}

func (l *Log) usableLocked() error {
	switch {
	case l.closed:
		return fmt.Errorf("write-ahead log %s: %w", l.dir, ErrClosed)
	case l.failed != nil:
		return l.failed
	}
	return nil
}

// Stats counts the log's work since Open.
type Stats struct {
	Flushes uint64 // group flushes (one fdatasync each, more when a segment rolled)
	Records uint64 // records they made durable
}

// Stats returns the counts since Open; Records/Flushes is the mean group.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Flushes: l.flushes, Records: l.records}
}

// Full returns why the last new segment could not be made for want of
// space, and since when such attempts fail; nil once a segment is made.
func (l *Log) Full() (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fullSince, l.full
}

// Err returns the error every Append and Sync now fails with (ErrFailed,
// ErrClosed), or nil.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usableLocked()
}

// Durable is the LSN up to which every record is on disk.
func (l *Log) Durable() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable
}

// Written is the LSN up to which every record is in the log's file: it
// outlives a kill of the process; up to Durable, a power cut too.
func (l *Log) Written() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written
}

// Sync waits until every record up to lsn is durable. Concurrent callers
// share one flush: the first to find none running writes and fdatasyncs
// everything appended so far, the others wait for it. ctx bounds the wait
// only; a record whose Sync was abandoned may still become durable.
func (l *Log) Sync(ctx context.Context, lsn uint64) error {
	return l.sync(ctx, lsn, 0, nil)
}

// SyncWithin is Sync that also calls written, when not nil, as soon as
// every record up to lsn is written to its segment file, before their
// fdatasync ends: from then on they outlive a kill of the process (the
// kernel holds them), though not yet a power cut. written runs on the
// caller's goroutine, at most once, and always before a nil return; it
// may come before an error too (the fdatasync failed after the write);
// it must not call the log. With grace 0 the caller flushes at once and
// calls written between the write and the fdatasync, so that what it
// starts (an answer written to a network connection) runs beside the
// flush. With a grace, the records are written at once (a write without
// a flush, when no flush runs), written is called, and the next flush of
// another caller that begins within grace makes them durable with its
// own records, one fdatasync for both; if none has, the caller flushes
// once grace is over. It returns once they are durable, as Sync.
func (l *Log) SyncWithin(ctx context.Context, lsn uint64, grace time.Duration, written func()) error {
	return l.sync(ctx, lsn, grace, written)
}

// Write waits until every record up to lsn is written to its segment
// file, not for its fdatasync: from then on the records outlive a kill of
// the process, not yet a power cut. A Sync or SyncWithin later makes them
// durable. It writes them itself when no flush runs.
func (l *Log) Write(ctx context.Context, lsn uint64) error {
	return l.sync(ctx, lsn, writeOnly, nil)
}

// writeOnly is sync's grace for Write: return once written.
const writeOnly = -1

func (l *Log) sync(ctx context.Context, lsn uint64, grace time.Duration, written func()) error {
	called := false
	tell := func() {
		called = true
		if written != nil {
			written()
		}
	}
	var graceOver <-chan time.Time // while a grace runs
	graceDone := grace == 0        // writeOnly: a write without a flush, as in a grace
	l.mu.Lock()
	for {
		if !called && l.written >= lsn {
			l.mu.Unlock()
			tell()
			l.mu.Lock()
		}
		if called && grace == writeOnly {
			l.mu.Unlock()
			return nil
		}
		if called && !graceDone && graceOver == nil {
			t := time.NewTimer(grace)
			defer t.Stop()
			graceOver = t.C
		}
		if l.durable >= lsn {
			l.mu.Unlock()
			return nil
		}
		if l.failed != nil {
			err := l.failed
			l.mu.Unlock()
			return err
		}
		if !l.flushing && graceOver == nil {
			switch {
			case called:
				l.flushLocked(lsn, nil, true)
			case written != nil:
				l.flushLocked(lsn, tell, graceDone)
			default: // the loop's top tells a grace its record is written
				l.flushLocked(lsn, nil, graceDone)
			}
			continue
		}
		// Wait for the running flush, or, in a grace, for the next one
		// (a grace's record is written: it adds nothing to a flush, so it
		// is not counted among the callers a flush yields to).
		ch, counted := l.flushed, graceOver == nil
		if counted {
			l.waiting++
		}
		l.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-graceOver:
			graceOver, graceDone = nil, true
		case <-ctx.Done():
			err = fmt.Errorf("write-ahead log %s: %w", l.dir, ctx.Err())
		}
		l.mu.Lock()
		if counted {
			l.waiting--
		}
		if err != nil {
			l.mu.Unlock()
			return err
		}
	}
}

// flushLocked writes everything pending and, with sync, fdatasyncs it
// and what an earlier write without sync left; l.mu is held on entry and
// on return, and released while the disk works. Once the records up to
// lsn are written, before any fdatasync, it calls written (when not nil).
func (l *Log) flushLocked(lsn uint64, written func(), sync bool) {
	l.flushing = true
	// On a busy till (another caller's record pending, or callers waiting
	// for the last flush) let runnable callers append first: they join
	// this flush instead of each paying for the next one. A lone caller
	// (one receipt at one till) flushes at once on its own goroutine: a
	// yield would only put it behind whatever else is runnable.
	if l.next-1-l.written > 1 || l.waiting > 0 {
		l.yields++
		l.mu.Unlock()
		runtime.Gosched()
		l.mu.Lock()
	}
	work := l.pending
	l.pending = nil
	var unsynced uint64 // written by a flush without sync, not yet durable
	if l.written > l.durable {
		unsynced = l.written
	}
	l.mu.Unlock()
	last, err := l.write(work, unsynced, sync, func(last uint64) {
		l.mu.Lock()
		l.written = max(l.written, last)
		l.mu.Unlock()
		if written != nil && last >= lsn {
			written()
			written = nil
			// Whatever written woke (a request waiting for its answer)
			// runs now, on this P, not after the fdatasync below: a
			// goroutine made runnable here waits otherwise until the
			// runtime takes the P back from the syscall.
			runtime.Gosched()
		}
	})
	l.mu.Lock()
	l.flushing = false
	for _, b := range work { // in the file now: the next batches reuse their buffers
		if cap(b.data) > 0 && cap(b.data) <= maxSpareBuf && len(l.spareBufs) < keptBufs {
			l.spareBufs = append(l.spareBufs, b.data[:0])
		}
	}
	if err != nil && l.failed == nil {
		l.failed = fmt.Errorf("write-ahead log %s: %w: %v", l.dir, ErrFailed, err)
	}
	if err == nil && sync && last > l.durable {
		l.flushes++
		l.records += last - l.durable
		l.durable = last
	}
	close(l.flushed)
	l.flushed = make(chan struct{})
}

// write puts batches in the file and, with sync, flushes them and the
// records up to unsynced (written before without sync, or 0); it returns
// the last LSN in the file. It calls wrote with that LSN once every batch
// is written, before the last fdatasync. Only the flushing caller runs it.
func (l *Log) write(work []batch, unsynced uint64, sync bool, wrote func(last uint64)) (uint64, error) {
	last, dirty := unsynced, unsynced > 0
	for _, b := range work {
		if b.roll {
			if dirty {
				if err := datasync(l.cur); err != nil {
					return 0, fmt.Errorf("flush %s: %w", l.cur.Name(), err)
				}
				dirty = false
			}
			l.fileMu.Lock()
			err := l.roll(b.first)
			l.fileMu.Unlock()
			l.mu.Lock()
			l.rollPending = false
			l.mu.Unlock()
			if err != nil {
				return 0, err
			}
		}
		if len(b.data) == 0 {
			continue
		}
		if _, err := l.cur.WriteAt(b.data, l.curOff); err != nil {
			return 0, fmt.Errorf("write %s: %w", l.cur.Name(), err)
		}
		l.curOff += int64(len(b.data))
		last, dirty = b.last, true
	}
	if dirty {
		wrote(last)
		if sync {
			if err := datasync(l.cur); err != nil {
				return 0, fmt.Errorf("flush %s: %w", l.cur.Name(), err)
			}
		}
	}
	if last == 0 {
		return 0, nil
	}
	l.maybePrepareSpare()
	return last, nil
}

// maybePrepareSpare makes the next segment ahead of need once the current
// one is half used, so the record that fills it does not wait for a segment of
// zeros. A failure is left for the Append that needs the spare to report.
func (l *Log) maybePrepareSpare() {
	l.mu.Lock()
	due := !l.spareReady && !l.rollPending && l.free < l.segSize/2
	l.mu.Unlock()
	if due {
		_ = l.ensureSpare()
	}
}

// Close flushes what is pending and closes the current segment. Later
// calls do nothing.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	last := l.next - 1
	l.mu.Unlock()
	err := l.Sync(context.Background(), last)
	l.mu.Lock()
	l.closed = true
	for l.flushing {
		ch := l.flushed
		l.mu.Unlock()
		<-ch
		l.mu.Lock()
	}
	l.mu.Unlock()
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if l.cur != nil {
		if cerr := l.cur.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", l.cur.Name(), cerr)
		}
		l.cur = nil
	}
	return err
}
