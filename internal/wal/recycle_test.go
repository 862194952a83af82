package wal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A cut can leave a hole in a segment's unacknowledged tail with later
// records intact behind it. Once that segment is trimmed and recycled as a
// later segment, those stale records must never read as the new segment's,
// even when the new records end exactly where a stale one begins and its
// LSN is the one expected next (the review's scenario, byte for byte).
func TestStaleRecordOfARecycledSegmentIsNotRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const id, seg = 7, 4096
	p := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	// Run 1, as the cut left it: record 1, a hole where 2 was, 3 and 4.
	data := encodeHeader(id, 1)
	data = appendRecord(data, 1, 1, p('a', 10))
	data = append(data, make([]byte, recHeader+10)...)
	data = appendRecord(data, 1, 3, p('c', 10))
	data = appendRecord(data, 1, 4, []byte("STALE run-1 record 4, never acknowledged"))
	data = append(data, make([]byte, seg-len(data))...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, segName(1)), data, 0o600))

	l, recs, err := Open(dir, id, 0, Options{SegmentSize: seg}) // run 2: record 2 again
	require.NoError(t, err)
	require.Len(t, recs, 1)
	lsn, err := l.Append(p('B', 10))
	require.NoError(t, err)
	require.NoError(t, l.Sync(t.Context(), lsn))
	require.NoError(t, l.Trim(2)) // segment 1 becomes the spare
	require.NoError(t, l.Close())

	l, _, err = Open(dir, id, 2, Options{SegmentSize: seg}) // run 3: segment 3 is the old segment 1
	require.NoError(t, err)
	lsn, err = l.Append(p('C', 3*(recHeader+10)-recHeader)) // ends where the stale record 4 begins
	require.NoError(t, err)
	require.NoError(t, l.Sync(t.Context(), lsn))
	require.NoError(t, l.Close()) // and the power goes before run 3's record 4

	l, recs, err = Open(dir, id, 2, Options{SegmentSize: seg})
	require.NoError(t, err)
	defer l.Close()
	require.Len(t, recs, 1, "record 4 of run 1 is stale")
	require.Equal(t, uint64(3), recs[0].LSN)
}
