package main

import (
	"bytes"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/wal"
)

// TestOnlinePhasesTellsTheTwoPaths traces two sales as the daemon marks
// them, one sent by the request that accepted it and one whose attempt
// ran on another goroutine, and one sale that was never answered; the
// table counts each answered sale once, on its path, and the slowest
// 1% (here one sale) apart, with what ran during it and where its
// handler's goroutine was.
func TestOnlinePhasesTellsTheTwoPaths(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, trace.Start(&buf))
	sale := func(id string, marks ...string) {
		for _, m := range marks {
			syncer.TracePhase(m, id)
		}
	}
	apart := func(id string, marks ...string) {
		done := make(chan struct{})
		go func() { defer close(done); sale(id, marks...) }()
		<-done
	}
	syncer.TracePhase("request", "")
	// Q1's accept waits for a database commit, and a GC runs: Q1 is the
	// slowest sale,
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucket([]byte("b"))
		return err
	}))
	// and the log makes new segments (at its open, and for records of
	// half a segment each).
	l, _, err := wal.Open(filepath.Join(t.TempDir(), "wal"), 1, 0, wal.Options{SegmentSize: 4096})
	require.NoError(t, err)
	defer l.Close()
	for range 3 {
		lsn, err := l.Append(make([]byte, 2000))
		require.NoError(t, err)
		require.NoError(t, l.Sync(t.Context(), lsn))
	}
	runtime.GC()
	time.Sleep(50 * time.Millisecond) // slower than Q2 on any machine
	sale("Q1", "enqueued", "claimed", "send", "answer", "recorded", "published", "awaited", "answered")
	syncer.TracePhase("request", "")
	sale("Q2", "enqueued")
	apart("Q2", "claimed", "send", "answer", "recorded", "published")
	sale("Q2", "awaited", "answered")
	syncer.TracePhase("request", "")
	sale("Q3", "enqueued", "claimed", "send")
	trace.Stop()

	p, err := readOnlinePhases(&buf)
	require.NoError(t, err)
	require.Equal(t, 2, p.sales, "the two answered sales")
	require.Len(t, p.here, 1, "Q1, sent by its own request")
	require.Len(t, p.goroutine, 1, "Q2, sent from another goroutine")
	require.Equal(t, 1, p.slowSales, "the slowest 1%: at least one sale")
	require.Equal(t, p.here[0], p.slowHandler, "the slowest sale: Q1")
	require.Equal(t, 1, p.slowDBAccept, "Q1's accept met a database commit")
	require.Zero(t, p.slowDBSend, "none ran during Q1's send")
	require.Equal(t, 1, p.slowSegment, "Q1's accept met a new segment of the log")
	require.Equal(t, 1, p.slowGC, "a GC ran during Q1")
	// Where the handlers' goroutines were: their split adds up to their
	// time; Q1's holds the log's syscalls and its sleep.
	sum := func(m map[string]time.Duration) (d time.Duration) {
		for _, st := range whereStates {
			d += m[st]
		}
		return d
	}
	require.Equal(t, p.handler, sum(p.where), "every sale's time is in one state or another")
	require.Equal(t, p.slowHandler, sum(p.slowWhere))
	require.Positive(t, p.slowWhere[whereStates[2]], "Q1's accept was in the log's syscalls")
	require.GreaterOrEqual(t, p.slowWhere[whereStates[5]], 50*time.Millisecond, "Q1 slept")
	var out bytes.Buffer
	p.print(&out, 0)
	require.Contains(t, out.String(), "where the handler's goroutine was")
	require.Contains(t, out.String(), "sent by the request that accepted it:")
	require.Contains(t, out.String(), "sent from a goroutine")
}
