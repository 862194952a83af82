//go:build linux

package wal_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/testing/powercut"
	"github.com/receiptd/receiptd/internal/wal"
)

// TestPowerCuts runs the log on the power-cut file system (package
// powercut): eight writers append and sync while the power goes, at a
// random write (inside a flush) or at a random moment, half the cuts
// keeping a random part of what was unsynced. The log must then refuse
// everything (ErrFailed), and after the cut Open must return every record
// whose Sync returned nil, in order, with nothing torn or stale among them;
// appends go on after it, through several segments and recycled spares.
func TestPowerCuts(t *testing.T) {
	powercut.Need(t)
	rng := rand.New(rand.NewPCG(7, uint64(os.Getpid())))
	disk := powercut.NewDisk()
	mnt := t.TempDir()
	acked := map[uint64]string{} // LSN → payload, every round's
	var after uint64             // the "applied" mark: segments before it are trimmed
	for round := range 20 {
		m, err := powercut.Mount(disk, mnt)
		require.NoError(t, err)
		dir := filepath.Join(mnt, "wal")
		l, recs, err := wal.Open(dir, id, after, wal.Options{SegmentSize: 16 << 10})
		require.NoError(t, err, "round %d", round)
		got := map[uint64]string{}
		for i, r := range recs {
			require.Equal(t, after+1+uint64(i), r.LSN, "round %d: records follow the mark with no gap", round)
			got[r.LSN] = string(r.Data)
		}
		for lsn, want := range acked {
			if lsn > after {
				require.Equal(t, want, got[lsn], "round %d: acknowledged record %d", round, lsn)
			}
		}
		if len(recs) > 0 && rng.IntN(2) == 0 {
			after = recs[len(recs)/2].LSN // as if half were applied elsewhere
			require.NoError(t, l.Trim(after))
		}

		if rng.IntN(2) == 0 {
			disk.KeepAtNextCut(rng)
		}
		cut := disk.PowerOffAtWrite(uint64(1 + rng.IntN(400)))
		var mu sync.Mutex
		var wg sync.WaitGroup
		var unexpected []error // require may not stop the test from a writer's goroutine
		for w := range 8 {
			wg.Go(func() {
				for i := 0; ; i++ {
					data := fmt.Sprintf("round %d writer %d record %d %0300d", round, w, i, i)
					lsn, err := l.Append([]byte(data))
					if err == nil {
						err = l.Sync(ctx, lsn)
					}
					if err != nil {
						if !errors.Is(err, wal.ErrFailed) && !errors.Is(err, wal.ErrDiskFull) {
							mu.Lock()
							unexpected = append(unexpected, err)
							mu.Unlock()
						}
						return
					}
					mu.Lock()
					acked[lsn] = data
					mu.Unlock()
				}
			})
		}
		<-cut
		wg.Wait()
		require.Empty(t, unexpected, "round %d: a writer's error is the cut's", round)
		require.ErrorIs(t, l.Err(), wal.ErrFailed, "round %d: a failed flush stops the log", round)
		_, err = l.Append([]byte("after the cut"))
		require.ErrorIs(t, err, wal.ErrFailed)
		_ = l.Close()
		require.NoError(t, m.Unmount())
		disk.PowerOn()
		t.Logf("round %d: %d records acknowledged in all", round, len(acked))
	}
}

// TestAWrittenRecordIsFlushedAtTheNextOpen: a record written and not yet
// flushed when its process died (SyncWithin's grace, its answer already
// handed over) is read by the next Open, which flushes it before it names
// a new segment after it: a power cut soon after keeps it, and the log
// opens with no gap. (Before Open flushed it, the cut took the record
// and left the new segment behind a gap: ErrCorrupt.)
func TestAWrittenRecordIsFlushedAtTheNextOpen(t *testing.T) {
	powercut.Need(t)
	disk := powercut.NewDisk()
	mnt := t.TempDir()
	m, err := powercut.Mount(disk, mnt)
	require.NoError(t, err)
	dir := filepath.Join(mnt, "wal")
	dead, _, err := wal.Open(dir, id, 0, wal.Options{SegmentSize: 16 << 10})
	require.NoError(t, err)
	appendSync(t, dead, "receipt")
	lsn, err := dead.Append([]byte("outcome"))
	require.NoError(t, err)
	killed, kill := context.WithCancel(ctx)
	require.ErrorIs(t, dead.SyncWithin(killed, lsn, time.Minute, kill), context.Canceled)
	require.Less(t, dead.Durable(), lsn, "written, not flushed: the process dies here")

	next, recs, err := wal.Open(dir, id, 0, wal.Options{SegmentSize: 16 << 10})
	require.NoError(t, err)
	require.Equal(t, []string{"receipt", "outcome"}, payloads(recs))
	disk.PowerOff()
	_ = next.Close()
	_ = dead.Close()
	require.NoError(t, m.Unmount())
	disk.PowerOn()

	m, err = powercut.Mount(disk, mnt)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Unmount() })
	l, recs, err := wal.Open(dir, id, 0, wal.Options{SegmentSize: 16 << 10})
	require.NoError(t, err, "no gap after the cut")
	t.Cleanup(func() { _ = l.Close() })
	require.Equal(t, []string{"receipt", "outcome"}, payloads(recs), "the cut kept what the second Open read")
}
