package posapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

func TestGateKeepsSendDataAlone(t *testing.T) {
	t.Parallel()
	var g gate
	ctx := context.Background()
	end1, err := g.shared(ctx)
	require.NoError(t, err)
	end2, err := g.shared(ctx)
	require.NoError(t, err)

	got := make(chan func())
	go func() {
		release, err := g.exclusive(ctx)
		if err == nil {
			got <- release
		}
	}()
	// The sendData waits for both sends; a new send waits for it.
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.queued == 1 }, time.Second, time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = g.shared(short)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "no new send starts while a sendData waits")
	end1()
	end1() // a second call changes nothing
	select {
	case <-got:
		t.Fatal("sendData started while a send was in flight")
	case <-time.After(20 * time.Millisecond):
	}
	end2()
	release := <-got
	sends, alone := g.busy()
	require.Equal(t, 0, sends)
	require.True(t, alone)

	started := make(chan struct{})
	go func() {
		end, err := g.shared(ctx)
		if err == nil {
			close(started)
			end()
		}
	}()
	select {
	case <-started:
		t.Fatal("a send started during the sendData")
	case <-time.After(20 * time.Millisecond):
	}
	release()
	<-started
}

func TestGateExclusiveGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	var g gate
	end, err := g.shared(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = g.exclusive(ctx)
	require.Error(t, err)
	// Its place in line is gone: sends go on.
	end2, err := g.shared(context.Background())
	require.NoError(t, err)
	end()
	end2()
}

func TestPace(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		sales   map[time.Duration]int // offset from start → count
		at      time.Duration
		perHour float64
	}{
		{"none", nil, 30 * time.Hour, 0},
		{"a few early: at least an hour's window", map[time.Duration]int{time.Minute: 6}, 10 * time.Minute, 6},
		{"over two hours", map[time.Duration]int{10 * time.Minute: 10, 90 * time.Minute: 10}, 2 * time.Hour, 10},
		{"older than a day is forgotten", map[time.Duration]int{time.Minute: 1000, 25 * time.Hour: 48}, 48 * time.Hour, 2},
		{"the window is a day at most", map[time.Duration]int{30 * time.Hour: 24}, 40 * time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pace{start: start}
			for off, n := range tc.sales {
				p.add(start.Add(off), n)
			}
			require.InDelta(t, tc.perHour, p.perHour(start.Add(tc.at)), 0.001)
		})
	}
}

func TestRunOut(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at, ok := runOut(now, 30, 10)
	require.True(t, ok)
	require.Equal(t, now.Add(3*time.Hour), at)
	at, ok = runOut(now, 0, 0)
	require.True(t, ok, "an empty reserve has run out now")
	require.Equal(t, now, at)
	_, ok = runOut(now, 30, 0)
	require.False(t, ok, "no sales, no forecast")
}

func TestObserveTimingSkew(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	recv := sent.Add(200 * time.Millisecond)
	for _, tc := range []struct {
		name string
		t    client.Timing
		want map[string]time.Duration
	}{
		{"posapi date header", client.Timing{Op: client.OpInfo, Sent: sent, Received: recv,
			Date: sent.Add(-5 * time.Minute).Format(http.TimeFormat)}, map[string]time.Duration{SourcePosAPI: -5 * time.Minute}},
		{"lookup date header", client.Timing{Op: client.OpBranchInfo, Sent: sent, Received: recv,
			Date: sent.Add(3 * time.Minute).Format(http.TimeFormat)}, map[string]time.Duration{SourceLookup: 3 * time.Minute}},
		{"receipt date in UB time", client.Timing{Op: client.OpCreateReceipt, Sent: sent, Received: recv,
			ReceiptDate: "2026-03-01 10:02:00"}, map[string]time.Duration{SourceReceipt: 2 * time.Minute}},
		{"receipt date ISO 8601", client.Timing{Op: client.OpCreateReceipt, Sent: sent, Received: recv,
			ReceiptDate: "2026-03-01T01:59:00Z"}, map[string]time.Duration{SourceReceipt: -time.Minute}},
		{"a round trip too slow tells nothing", client.Timing{Op: client.OpInfo, Sent: sent, Received: sent.Add(time.Minute),
			Date: sent.Format(http.TimeFormat)}, map[string]time.Duration{}},
		{"garbage tells nothing", client.Timing{Op: client.OpCreateReceipt, Sent: sent, Received: recv,
			Date: "yesterday", ReceiptDate: "soon"}, map[string]time.Duration{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]time.Duration{}
			for _, s := range observe(tc.t) {
				got[s.source] = s.skew
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSkewThatMattersIsTheFurthest(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	w := New(nil, Config{Now: func() time.Time { return now }}, nil, nil)
	w.clock[SourcePosAPI] = reading{skew: time.Second, at: now}
	w.clock[SourceLookup] = reading{skew: -4 * time.Minute, at: now.Add(-time.Hour)}
	w.clock[SourceReceipt] = reading{skew: 10 * time.Minute, at: now.Add(-readingTTL - time.Second)}
	skew, src, ok := w.skewLocked(now)
	require.True(t, ok)
	require.Equal(t, -4*time.Minute, skew, "a reading past its time counts no more")
	require.Equal(t, SourceLookup, src)
}
