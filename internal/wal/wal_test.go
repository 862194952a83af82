package wal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/wal"
)

var ctx = context.Background()

const id = 0x5eed

func open(t *testing.T, dir string, after uint64, seg int64) (*wal.Log, []wal.Record) {
	t.Helper()
	l, recs, err := wal.Open(dir, id, after, wal.Options{SegmentSize: seg})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, recs
}

func appendSync(t *testing.T, l *wal.Log, data string) uint64 {
	t.Helper()
	lsn, err := l.Append([]byte(data))
	require.NoError(t, err)
	require.NoError(t, l.Sync(ctx, lsn))
	return lsn
}

func payloads(recs []wal.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Data))
	}
	return out
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	require.NoError(t, err)
	return m
}

func TestRecordsComeBackInOrderAfterTheMark(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, recs := open(t, dir, 0, 0)
	require.Empty(t, recs)
	for i := 1; i <= 5; i++ {
		require.Equal(t, uint64(i), appendSync(t, l, fmt.Sprint("r", i)))
	}
	require.Equal(t, uint64(5), l.Durable())
	require.NoError(t, l.Close())

	l, recs = open(t, dir, 2, 0)
	require.Equal(t, []string{"r3", "r4", "r5"}, payloads(recs))
	require.Equal(t, uint64(3), recs[0].LSN)
	require.Equal(t, uint64(6), appendSync(t, l, "r6"), "appends go on after the newest record")
	require.NoError(t, l.Close())

	_, recs = open(t, dir, 0, 0)
	require.Equal(t, []string{"r1", "r2", "r3", "r4", "r5", "r6"}, payloads(recs))
}

// Concurrent appends share flushes, and every Sync returns only once its
// record is durable.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 64<<10) // small segments: the records roll over several
	const writers, each = 16, 200
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				lsn, err := l.Append(fmt.Appendf(nil, "w%02d-%03d %0100d", w, i, i))
				if err == nil {
					err = l.Sync(ctx, lsn)
				}
				if err == nil && l.Durable() < lsn {
					err = fmt.Errorf("Sync(%d) returned with %d durable", lsn, l.Durable())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
	flushes := l.Stats().Flushes
	t.Logf("%d records in %d flushes (%d yielded first), %d segments", writers*each, flushes, wal.Yields(l), wal.Segments(l))
	require.Less(t, flushes, uint64(writers*each), "flushes are shared")
	require.Positive(t, wal.Yields(l), "a busy log lets other callers join a flush")
	require.Greater(t, wal.Segments(l), 3)
	require.NoError(t, l.Close())
	_, recs := open(t, dir, 0, 64<<10)
	require.Len(t, recs, writers*each)
	// Every record whole and once: the batches, the segment rolls' too,
	// are written from buffers reused from flush to flush.
	want := map[string]bool{}
	for w := range writers {
		for i := range each {
			want[fmt.Sprintf("w%02d-%03d %0100d", w, i, i)] = true
		}
	}
	for i, r := range recs {
		require.Equal(t, uint64(i+1), r.LSN)
		require.True(t, want[string(r.Data)], "record %d: %q", r.LSN, r.Data)
		delete(want, string(r.Data))
	}
}

// A lone caller flushes on its own goroutine at once: no yield to the
// scheduler, so one receipt at one till pays no hand-off. Records of
// every size read back whole, though each batch reuses the buffer of the
// one before.
func TestLoneCallerFlushesWithoutYielding(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 64<<10)
	var want []string
	for i := range 300 {
		p := fmt.Sprintf("r%03d-%s", i, strings.Repeat("x", (i*37)%900))
		want = append(want, p)
		appendSync(t, l, p)
	}
	require.Zero(t, wal.Yields(l), "one caller at a time never yields")
	require.Equal(t, uint64(300), l.Stats().Flushes)
	require.NoError(t, l.Close())
	_, recs := open(t, dir, 0, 64<<10)
	require.Equal(t, want, payloads(recs))
}

// Trimmed segments go (one is kept as the spare and reused), the current
// one stays, and what is left reads back the records after the mark.
func TestTrimAndRecycle(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 8<<10)
	var last uint64
	for i := range 100 {
		last = appendSync(t, l, fmt.Sprintf("%0500d", i))
	}
	before := len(segments(t, dir))
	require.Greater(t, before, 4)
	require.NoError(t, l.Trim(last-3))
	after := segments(t, dir)
	require.Less(t, len(after), 3, "only the segments that hold records after the mark are left")
	require.FileExists(t, filepath.Join(dir, "spare"))
	for i := range 100 { // through recycled spares, whose old records must never come back
		appendSync(t, l, fmt.Sprintf("second-%0500d", i))
	}
	require.NoError(t, l.Close())
	_, recs := open(t, dir, last-3, 8<<10)
	require.Len(t, recs, 103)
	require.Equal(t, last-2, recs[0].LSN)
	require.Equal(t, fmt.Sprintf("second-%0500d", 99), string(recs[102].Data))
}

// A burst fills several segments before its records are applied; once
// they are trimmed, the next burst's segments are renamed from them (the
// spare and its reserves), none written as zeros, and what the new
// segments hold reads back whole.
func TestTrimKeepsSegmentsForTheNextBurst(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 8<<10)
	var last uint64
	for i := range 100 { // about 7 segments
		last = appendSync(t, l, fmt.Sprintf("%0500d", i))
	}
	require.NoError(t, l.Trim(last))
	for _, name := range []string{"spare", "spare-1", "spare-4"} {
		require.FileExists(t, filepath.Join(dir, name))
	}
	made := wal.SparesMade(l)
	var second uint64
	for i := range 70 { // five more segments
		second = appendSync(t, l, fmt.Sprintf("second-%0500d", i))
	}
	require.Equal(t, made, wal.SparesMade(l), "the second burst's segments are the first's, renamed")
	require.NoError(t, l.Close())
	_, recs := open(t, dir, last, 8<<10)
	require.Len(t, recs, 70)
	require.Equal(t, second, recs[69].LSN)
	require.Equal(t, fmt.Sprintf("second-%0500d", 69), string(recs[69].Data))
}

// A cut leaves a torn record: the records before it come back, nothing
// after it, and records appended after the restart are never followed by
// the older bytes that lay beyond the tear.
func TestTornRecordEndsTheLog(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 0)
	for i := 1; i <= 5; i++ {
		appendSync(t, l, fmt.Sprint("first-", i))
	}
	require.NoError(t, l.Close())
	seg := segments(t, dir)
	require.Len(t, seg, 1)
	data, err := os.ReadFile(seg[0])
	require.NoError(t, err)
	// Record 3 starts after the header (32 bytes) and two records of 16+7.
	off := 32 + 2*(16+7)
	data[off+16] ^= 0xff // its first payload byte: the checksum fails
	require.NoError(t, os.WriteFile(seg[0], data, 0o600))

	l, recs := open(t, dir, 0, 0)
	require.Equal(t, []string{"first-1", "first-2"}, payloads(recs))
	require.Equal(t, uint64(3), appendSync(t, l, "again-3"))
	require.NoError(t, l.Close())
	_, recs = open(t, dir, 0, 0)
	require.Equal(t, []string{"first-1", "first-2", "again-3"}, payloads(recs),
		"records 4 and 5 of the first run never follow the new record 3")
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"a missing segment", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(segments(t, dir)[1]))
		}, "a segment is missing"},
		{"a damaged header", func(t *testing.T, dir string) {
			f, err := os.OpenFile(segments(t, dir)[0], os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte{0xff}, 12)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, "damaged header"},
		{"a segment renamed", func(t *testing.T, dir string) {
			s := segments(t, dir)
			require.NoError(t, os.Rename(s[1], filepath.Join(dir, "00000000000000ff.wal")))
		}, "a segment is missing"},
		{"a foreign file", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(segments(t, dir)[0], []byte("not a log segment at all, but long enough"), 0o600))
		}, "not a receiptd write-ahead log segment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "wal")
			l, _ := open(t, dir, 0, 4<<10)
			for i := range 30 {
				appendSync(t, l, fmt.Sprintf("%0300d", i))
			}
			require.NoError(t, l.Close())
			require.Greater(t, len(segments(t, dir)), 2)
			c.damage(t, dir)
			_, _, err := wal.Open(dir, id, 0, wal.Options{SegmentSize: 4 << 10})
			require.ErrorIs(t, err, wal.ErrCorrupt)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, dir, "the error names the file")
		})
	}
}

func TestAnotherDatabasesLogIsRefused(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 0)
	appendSync(t, l, "mine")
	require.NoError(t, l.Close())
	_, _, err := wal.Open(dir, id+1, 0, wal.Options{})
	require.ErrorIs(t, err, wal.ErrCorrupt)
	require.ErrorContains(t, err, "belongs to another database")
}

// Segments wholly before the mark are not read: damage there is harmless.
func TestSegmentsBeforeTheMarkAreNotRead(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 4<<10)
	var last uint64
	for i := range 30 {
		last = appendSync(t, l, fmt.Sprintf("%0300d", i))
	}
	require.NoError(t, l.Close())
	require.NoError(t, os.WriteFile(segments(t, dir)[0], []byte("garbage"), 0o600))
	_, recs := open(t, dir, last-1, 4<<10)
	require.Len(t, recs, 1)
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	l, _ := open(t, filepath.Join(t.TempDir(), "wal"), 0, 4<<10)
	_, err := l.Append(make([]byte, 5<<10))
	require.ErrorIs(t, err, wal.ErrTooLarge)
	require.Equal(t, uint64(1), appendSync(t, l, "fits"), "nothing was taken by the refused record")
}

func TestClosed(t *testing.T) {
	t.Parallel()
	l, _ := open(t, filepath.Join(t.TempDir(), "wal"), 0, 0)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close may be called more than once")
	_, err := l.Append([]byte("x"))
	require.ErrorIs(t, err, wal.ErrClosed)
}

func TestCount(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	n, err := wal.Count(dir)
	require.NoError(t, err)
	require.Zero(t, n, "a missing directory has none")
	l, _ := open(t, dir, 0, 0)
	require.NoError(t, l.Close())
	n, err = wal.Count(dir)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// Records appended without a Sync between them may need several new
// segments: each is promised in turn (an Append that needs the next one
// flushes the one before), and all read back in order.
func TestAppendsBeyondASegmentWithoutSync(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 4<<10)
	var last uint64
	for i := range 50 {
		lsn, err := l.Append(fmt.Appendf(nil, "%0400d", i))
		require.NoError(t, err)
		last = lsn
	}
	require.NoError(t, l.Sync(ctx, last))
	require.Greater(t, wal.Segments(l), 4)
	require.NoError(t, l.Close())
	_, recs := open(t, dir, 0, 4<<10)
	require.Len(t, recs, 50)
	require.Equal(t, fmt.Sprintf("%0400d", 49), string(recs[49].Data))
}

// TestSyncWithinNoGraceCallsWrittenBeforeTheFlushEnds: with no grace, a
// lone caller's written runs once its record is in the segment file
// (read back by Scan, as a process started after a kill would find it)
// and before the record is durable; a caller whose record is durable
// already is told at once. written runs once, before SyncWithin returns
// nil; and with it nil SyncWithin is Sync.
func TestSyncWithinNoGraceCallsWrittenBeforeTheFlushEnds(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 0)
	appendSync(t, l, "before")
	lsn, err := l.Append([]byte("outcome"))
	require.NoError(t, err)
	calls := 0
	require.NoError(t, l.SyncWithin(ctx, lsn, 0, func() {
		calls++
		require.Less(t, l.Durable(), lsn, "written comes before the flush ends")
		require.Contains(t, scanned(t, dir), "outcome", "the record is in the file")
	}))
	require.Equal(t, 1, calls)
	require.Equal(t, lsn, l.Durable())

	require.NoError(t, l.SyncWithin(ctx, lsn, 0, func() { calls++ }), "a durable record")
	require.Equal(t, 2, calls, "written is called for a record already durable")
	lsn2, err := l.Append([]byte("plain"))
	require.NoError(t, err)
	require.NoError(t, l.SyncWithin(ctx, lsn2, 0, nil))
	require.Equal(t, lsn2, l.Durable())
}

// TestSyncWithinJoinsTheNextFlush: a record synced within a grace is in
// the file when written is called, not yet durable; another caller's
// flush within the grace makes both durable with one fdatasync; alone,
// it is flushed once the grace is over. Close flushes a record written
// and not flushed, and the next Open reads it.
func TestSyncWithinJoinsTheNextFlush(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "wal")
	l, _ := open(t, dir, 0, 0)
	appendSync(t, l, "receipt 1")

	outcome, err := l.Append([]byte("outcome 1"))
	require.NoError(t, err)
	wrote := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- l.SyncWithin(ctx, outcome, time.Minute, func() {
			assert.Less(t, l.Durable(), outcome, "written before any flush of it") // not the test's goroutine: no FailNow
			close(wrote)
		})
	}()
	<-wrote
	require.Contains(t, scanned(t, dir), "outcome 1", "in the file at written")
	select {
	case err := <-done:
		t.Fatalf("returned before a flush: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	before := l.Stats().Flushes
	next := appendSync(t, l, "receipt 2")
	require.NoError(t, <-done, "the next caller's flush made it durable")
	require.Equal(t, next, l.Durable())
	require.Equal(t, before+1, l.Stats().Flushes, "one fdatasync for both")

	alone, err := l.Append([]byte("outcome 2"))
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, l.SyncWithin(ctx, alone, 30*time.Millisecond, nil))
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "alone, it waits out its grace")
	require.Equal(t, alone, l.Durable())

	last, err := l.Append([]byte("outcome 3"))
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	err = l.SyncWithin(cctx, last, time.Minute, cancel)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, l.Durable(), last)
	require.NoError(t, l.Close())
	_, recs := open(t, dir, 0, 0)
	require.Equal(t, []string{"receipt 1", "outcome 1", "receipt 2", "outcome 2", "outcome 3"}, payloads(recs))
}

func scanned(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := wal.Scan(dir)
	require.NoError(t, err)
	var found []string
	for _, s := range segs {
		found = append(found, payloads(s.Records)...)
	}
	return found
}

// TestWriteDoesNotFlush: Write puts the records in the segment file (a
// reader of the file finds them: they outlive a kill of the process) and
// returns without an fdatasync; a Sync after it makes them durable with
// one.
func TestWriteDoesNotFlush(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, _ := open(t, dir, 0, 0)
	first, err := l.Append([]byte("one"))
	require.NoError(t, err)
	lsn, err := l.Append([]byte("two"))
	require.NoError(t, err)
	require.NoError(t, l.Write(ctx, lsn))
	require.Equal(t, lsn, l.Written())
	require.Less(t, l.Durable(), first, "written, not flushed")
	require.Zero(t, l.Stats().Flushes)
	segs, err := wal.Scan(dir)
	require.NoError(t, err)
	require.Len(t, segs, 1)
	data, err := os.ReadFile(segs[0].Path)
	require.NoError(t, err)
	require.Contains(t, string(data), "two", "in the file")

	require.NoError(t, l.Write(ctx, lsn), "written already: nothing to do")
	require.Zero(t, l.Stats().Flushes)
	require.NoError(t, l.Sync(ctx, lsn))
	require.Equal(t, lsn, l.Durable())
	require.Equal(t, uint64(1), l.Stats().Flushes)
}
