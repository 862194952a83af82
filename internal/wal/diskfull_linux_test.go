//go:build linux

package wal_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/store/storetest"
	"github.com/receiptd/receiptd/internal/wal"
)

// On a full disk the log refuses what it cannot hold with ErrDiskFull,
// nothing half-taken: every record it acknowledged reads back, and once
// trimmed segments make room, it takes records again.
func TestDiskFull(t *testing.T) {
	const seg = 64 << 10
	dir := filepath.Join(storetest.SmallVolume(t, 5*seg), "wal")
	l, _ := open(t, dir, 0, seg)
	var (
		acked uint64
		err   error
	)
	for i := 0; i < 10000; i++ {
		var lsn uint64
		if lsn, err = l.Append(fmt.Appendf(nil, "%0500d", i)); err != nil {
			break
		}
		if err = l.Sync(ctx, lsn); err != nil {
			break
		}
		acked = lsn
	}
	require.ErrorIs(t, err, wal.ErrDiskFull)
	require.ErrorContains(t, err, dir)
	t.Logf("%d records acknowledged, then: %v", acked, err)
	require.Equal(t, acked, l.Durable())
	_, err = l.Append(fmt.Appendf(nil, "%0500d", 0))
	require.ErrorIs(t, err, wal.ErrDiskFull, "refused again, nothing taken")
	require.NoError(t, l.Err(), "a full disk does not break the log")

	// A restart on the full disk: the log opens (the daemon must start to
	// send what is queued) and refuses new records until there is room.
	require.NoError(t, l.Close())
	l, recs, err := wal.Open(dir, id, 0, wal.Options{SegmentSize: seg})
	require.NoError(t, err, "the log opens on a full disk")
	require.Len(t, recs, int(acked))
	_, err = l.Append(fmt.Appendf(nil, "%0500d", 0))
	require.ErrorIs(t, err, wal.ErrDiskFull)
	since, full := l.Full()
	require.ErrorIs(t, full, wal.ErrDiskFull)
	require.False(t, since.IsZero())

	require.NoError(t, l.Trim(acked), "the records are applied elsewhere: the old segments may go")
	next := appendSync(t, l, "room again")
	require.Equal(t, acked+1, next, "no LSN was lost to the refusals")
	_, full = l.Full()
	require.NoError(t, full)
	require.NoError(t, l.Close())

	// Applied up to acked, a restart needs no new space: a wholly applied
	// segment becomes the spare.
	_, recs = open(t, dir, acked, seg)
	require.Equal(t, []string{"room again"}, payloads(recs))
}
