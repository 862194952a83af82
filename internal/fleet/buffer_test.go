package fleet

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func openTestBuffer(t *testing.T, dir string, maxBytes int64) *buffer {
	t.Helper()
	b, err := openBuffer(bufferOptions{dir: dir, maxBytes: maxBytes, maxAge: 3_600_000})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.close() })
	return b
}

func rec(ts int64, size int) record {
	return record{ts: ts, samples: 10, payload: bytes.Repeat([]byte{byte(ts)}, size)}
}

func TestBufferTornTailDroppedOnReopen(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cut  func(seg string, size int64) error
	}{
		{"half a record", func(seg string, size int64) error { return os.Truncate(seg, size-50) }},
		{"a flipped byte", func(seg string, _ int64) error {
			data, err := os.ReadFile(seg)
			if err != nil {
				return err
			}
			data[len(data)-1] ^= 0xff
			return os.WriteFile(seg, data, 0o640)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			b := openTestBuffer(t, dir, 64<<20)
			for ts := int64(1); ts <= 3; ts++ {
				require.NoError(t, b.append(rec(ts, 100)))
			}
			require.NoError(t, b.close())
			seg := b.segPath(b.segs[len(b.segs)-1].seq)
			fi, err := os.Stat(seg)
			require.NoError(t, err)
			require.NoError(t, c.cut(seg, fi.Size()))

			b = openTestBuffer(t, dir, 64<<20)
			require.Equal(t, uint64(20), b.stats().samples, "the two whole records remain")
			got, err := b.peek(3, 1<<20, 10)
			require.NoError(t, err)
			require.Len(t, got.recs, 2)
			require.NoError(t, b.append(rec(4, 100)), "appends go on after the cut")
			require.Equal(t, uint64(30), b.stats().samples)
			require.NoError(t, b.close())
			fi2, err := os.Stat(seg)
			require.NoError(t, err)
			require.Equal(t, fi.Size(), fi2.Size(), "the torn record was cut off before the new one")
			b = openTestBuffer(t, dir, 64<<20)
			require.Equal(t, uint64(30), b.stats().samples)
		})
	}
}

func TestBufferBoundsDropOldestFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := openTestBuffer(t, dir, 256<<10) // segments of 64 KiB
	for ts := int64(1); ts <= 100; ts++ {
		require.NoError(t, b.append(rec(ts, 10<<10)))
	}
	s := b.stats()
	require.LessOrEqual(t, s.bytes, int64(256<<10))
	require.Positive(t, s.dropped)
	require.Equal(t, uint64(100*10), s.samples+s.dropped, "every sample is buffered or counted as dropped")
	got, err := b.peek(100, 1<<20, 1)
	require.NoError(t, err)
	require.Greater(t, got.recs[0].ts, int64(1), "the oldest went first")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.LessOrEqual(t, len(ents), 5)

	// Age: an append an hour and a bit later drops everything older.
	require.NoError(t, b.append(rec(101+3_600_000, 10)))
	s = b.stats()
	require.Equal(t, uint64(10), s.samples)
	require.Equal(t, uint64(100*10), s.dropped)
}

func TestBufferAckAndCursor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := openTestBuffer(t, dir, 1<<20)
	for ts := int64(1); ts <= 40; ts++ {
		require.NoError(t, b.append(rec(ts, 10<<10)))
	}
	got, err := b.peek(40, 100<<10, 500)
	require.NoError(t, err)
	require.Len(t, got.recs, 9, "bounded by bytes")
	require.Equal(t, 90, got.samples)
	require.NoError(t, b.ack(got.last(), false))
	require.Equal(t, uint64(310), b.stats().samples)
	require.Equal(t, int64(10), b.stats().oldest)
	require.NoError(t, b.close())

	b = openTestBuffer(t, dir, 1<<20)
	require.Equal(t, uint64(310), b.stats().samples, "the cursor survives a restart")
	got, err = b.peek(40, 1<<20, 500)
	require.NoError(t, err)
	require.Equal(t, int64(10), got.recs[0].ts)
	require.NoError(t, b.ack(got.last(), true))
	require.Equal(t, uint64(0), b.stats().samples)
	require.Equal(t, uint64(310), b.stats().dropped, "a refused batch is counted")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var segs int
	for _, e := range ents {
		if filepath.Ext(e.Name()) == segSuffix {
			segs++
		}
	}
	require.Equal(t, 1, segs, "sent segments are deleted, the active one stays")
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, rec(1, 10)))
	f.Add(appendRecord(appendRecord(nil, rec(1, 0)), rec(2, 3)))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRecord(data)
		if err != nil {
			require.Contains(t, []error{errShort, errCorrupt}, err)
			return
		}
		require.LessOrEqual(t, r.size(), len(data))
		again := appendRecord(nil, r)
		require.Equal(t, data[:r.size()], again, "a record that decodes is what appendRecord writes")
	})
}
