package api

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has installed

	"github.com/stretchr/testify/require"
)

func TestStartOfDay(t *testing.T) {
	t.Parallel()
	ub, err := time.LoadLocation("Asia/Ulaanbaatar")
	require.NoError(t, err)
	santiago, err := time.LoadLocation("America/Santiago") // skips 00:00-01:00 on 2024-09-08
	require.NoError(t, err)
	cairo, err := time.LoadLocation("Africa/Cairo") // skips 00:00-01:00 on 2024-04-26
	require.NoError(t, err)
	for _, c := range []struct {
		at   time.Time
		want time.Time
	}{
		{time.Date(2026, 11, 23, 0, 5, 0, 0, ub), time.Date(2026, 11, 23, 0, 0, 0, 0, ub)},
		{time.Date(2026, 11, 22, 23, 59, 0, 0, ub), time.Date(2026, 11, 22, 0, 0, 0, 0, ub)},
		{time.Date(2024, 9, 8, 1, 5, 0, 0, santiago), time.Date(2024, 9, 8, 1, 0, 0, 0, santiago)},
		{time.Date(2024, 4, 26, 1, 5, 0, 0, cairo), time.Date(2024, 4, 26, 1, 0, 0, 0, cairo)},
	} {
		got := startOfDay(c.at, c.at.Location())
		require.True(t, got.Equal(c.want), "%v: got %v, want %v", c.at, got, c.want)
		require.Equal(t, c.at.Day(), got.In(c.at.Location()).Day())
	}
}
