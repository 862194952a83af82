package main

import (
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSwitchFigures: each attempt is counted where the report says it
// is: refused, closed unanswered, answered with an error, acknowledged;
// an acknowledged queueId stored never or twice is named; only answers
// overlapping update.json's switching..probation are in the window.
func TestSwitchFigures(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ok := func(sale, id string, from, to int) posAttempt {
		return posAttempt{sale: sale, start: at(from), end: at(to), status: 202, queueID: id, conns: 1}
	}
	r := &switchRound{
		t0:       at(1000),
		reported: at(9000),
		phases: []phaseSeen{{phase: "idle"}, {phase: "staged", since: at(1400)},
			{phase: "switching", since: at(1500)}, {phase: "probation", since: at(1550)}, {phase: "installed", since: at(4550)}},
		attempts: []posAttempt{
			ok("s1", "Q1", 0, 5),       // before the offer
			ok("s2", "Q2", 1490, 1520), // overlaps the switch
			{sale: "s3", start: at(1501), end: at(1502), err: io.EOF, wrote: true},
			{sale: "s3", retry: true, start: at(1502), end: at(1540), status: 202, queueID: "Q3", conns: 1},
			{sale: "s4", start: at(1503), end: at(1503), err: syscall.ECONNREFUSED, refused: true},
			{sale: "s4", retry: true, start: at(1503), end: at(1600), err: errors.New("EOF")},
			{sale: "s5", start: at(1600), end: at(1610), status: 503},
			ok("s6", "Q6", 2000, 2001),
			{sale: "s7", start: at(2100), end: at(2102), status: 202, queueID: "Q7", conns: 2},
		},
		entries: map[string]int{"Q1": 1, "Q2": 1, "Q3": 1, "Q6": 2, "Q9": 1},
	}
	f := r.figures()
	require.Equal(t, at(1500), f.from)
	require.Equal(t, at(1550), f.to)
	require.Len(t, f.refused, 1)
	require.Len(t, f.unanswered, 2, "the EOF and the refused sale's failed retry")
	require.Len(t, f.errAnswers, 1)
	require.Equal(t, 1, f.resent)
	require.Equal(t, 7, f.sales)
	require.Equal(t, 5, f.acked)
	require.Equal(t, 3, f.storedOnce)
	require.Equal(t, []string{"Q7"}, f.missing)
	require.Equal(t, []string{"Q6 ×2"}, f.double)
	require.Equal(t, 1, f.notAcked)
	require.Equal(t, sample{30 * time.Millisecond, 38 * time.Millisecond}, f.window, "s2 and s3's retry overlap the switch")
	require.Equal(t, sample{5 * time.Millisecond}, f.before)
	require.False(t, f.clean())
	require.Equal(t, "PASS", f.answerVerdict())

	r.attempts = r.attempts[:1]
	f = r.figures()
	require.True(t, f.clean())
	require.Contains(t, f.answerVerdict(), "not measured")
}
