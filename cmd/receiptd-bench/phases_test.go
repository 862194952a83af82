package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/exp/trace"
)

func TestFloorRulesKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		funcs []string
		want  syscallKind
	}{
		{"log fdatasync", []string{"golang.org/x/sys/unix.Fdatasync", "github.com/receiptd/receiptd/internal/wal.datasync", "github.com/receiptd/receiptd/internal/wal.(*Log).write"}, kindWALSync},
		{"naive server's fdatasync", []string{"syscall.Fdatasync", "main.(*naiveServer).append"}, kindWALSync},
		{"database's fdatasync", []string{"golang.org/x/sys/unix.Fdatasync", "go.etcd.io/bbolt.fdatasync", "go.etcd.io/bbolt.(*Tx).Commit"}, kindDBSync},
		{"another fdatasync", []string{"golang.org/x/sys/unix.Fdatasync", "main.somewhere"}, kindSync},
		{"log pwrite", []string{"syscall.pwrite", "os.(*File).WriteAt", "github.com/receiptd/receiptd/internal/wal.(*Log).write"}, kindWALWrite},
		{"naive server's write", []string{"syscall.write", "os.(*File).Write", "main.(*naiveServer).append"}, kindWALWrite},
		{"answer through finishRequest", []string{"syscall.write", "net.(*conn).Write", "net/http.(*response).finishRequest"}, kindAnswer},
		{"answer through a bufio flush", []string{"syscall.write", "net.(*conn).Write", "bufio.(*Writer).Flush"}, kindAnswer},
		{"read of the request", []string{"syscall.read", "internal/poll.(*FD).Read", "net.(*conn).Read"}, kindRead},
		{"a Read without syscall.read", []string{"syscall.Syscall", "net.(*conn).Read"}, kindRead},
		{"anything else", []string{"syscall.Syscall6", "runtime.goexit"}, kindOther},
		{"no stack", nil, kindOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, floorRules.kind(tc.funcs))
		})
	}
}

// TestPhaseCounter steps one handler through a receipt and a database
// goroutine through an fdatasync that overlaps the handler's, and checks
// where each nanosecond went.
func TestPhaseCounter(t *testing.T) {
	t.Parallel()
	const handler, db trace.GoID = 1, 2
	const (
		run  = trace.GoRunning
		sys  = trace.GoSyscall
		wait = trace.GoWaiting
		rdy  = trace.GoRunnable
	)
	c := newPhaseCounter()
	for _, s := range []struct {
		g        trace.GoID
		t        trace.Time
		from, to trace.GoState
		reason   string
		kind     syscallKind
	}{
		{handler, 0, wait, run, "", kindOther},
		{handler, 10, run, sys, "", kindRead},     // running before: 10
		{handler, 15, sys, run, "", kindOther},    // read: 5
		{handler, 20, run, sys, "", kindWALWrite}, // running before: 5
		{handler, 30, sys, run, "", kindOther},    // log pwrite: 10
		{handler, 32, run, sys, "", kindWALSync},  // running before: 2
		{db, 40, wait, run, "", kindOther},
		{db, 50, run, sys, "", kindDBSync},      // other goroutines: 10
		{db, 100, sys, run, "", kindOther},      // (the database's fdatasync: 50..100)
		{db, 110, run, wait, "sync", kindOther}, // other goroutines: 10
		{handler, 132, sys, rdy, "", kindOther}, // log fdatasync: 100
		{handler, 140, rdy, run, "", kindOther}, // runnable: 8
		{handler, 150, run, wait, "sync", kindOther},
		{handler, 170, wait, run, "", kindOther},        // waiting in the handler: sync: 20; running after: 10
		{handler, 175, run, sys, "", kindAnswer},        // running after: 5
		{handler, 180, sys, run, "", kindOther},         // answer: 5
		{handler, 190, run, wait, "network", kindOther}, // running after: 10
		{handler, 300, wait, run, "", kindOther},        // the next request: not counted
		{handler, 304, run, sys, "", kindRead},          // running before: 4
	} {
		c.step(s.g, s.t, s.from, s.to, s.reason, s.kind)
	}
	p := c.result()
	require.Equal(t, 1, p.receipts)
	require.Equal(t, map[string]time.Duration{
		phaseRunBefore: 21, phaseRead: 5, phaseWALWrite: 10, phaseWALSync: 100, phaseRunnable: 8,
		phaseRunAfter: 25, phaseWaitIn + "sync": 20, phaseAnswer: 5, phaseOthersRun: 20,
	}, p.phase)
	var out bytes.Buffer
	p.print(&out)
	require.Contains(t, out.String(), "receipts (log fdatasyncs by connection goroutines): 1\n")
	require.Contains(t, out.String(), "1 (100.0%) overlapped one of the database's 1 fdatasyncs")
}
