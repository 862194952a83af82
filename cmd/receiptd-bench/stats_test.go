package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
)

func TestPercentiles(t *testing.T) {
	t.Parallel()
	var s sample
	for i := 100; i >= 1; i-- { // unsorted on purpose
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, s.p50())
	require.Equal(t, 99*time.Millisecond, s.p99())
	require.Equal(t, 100*time.Millisecond, s.pct(100))
	require.Equal(t, 100*time.Millisecond, s[0], "pct must not reorder the sample")
	require.Zero(t, sample(nil).p50())
	require.Equal(t, time.Second, sample{time.Second}.p99())
}

func TestIssueRate(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	rs := []sim.Issued{{At: t0}, {At: t0.Add(500 * time.Millisecond)}, {At: t0.Add(time.Second)}}
	require.InDelta(t, 2.0, issueRate(rs), 1e-9)
	require.Zero(t, issueRate(rs[:1]))
	require.Zero(t, issueRate([]sim.Issued{{At: t0}, {At: t0}}))
}

func TestVerdictAndFormat(t *testing.T) {
	t.Parallel()
	require.Equal(t, "PASS", verdict(true))
	require.Equal(t, "MISS", verdict(false))
	require.Equal(t, "0.250ms", ms(250*time.Microsecond))
	require.Equal(t, "12.50ms", ms(12500*time.Microsecond))
	require.Equal(t, "1500ms", ms(1500*time.Millisecond))
	require.Equal(t, "1.5 MiB", mib(3<<19))
}
