package backup

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// TestFirstDelay: the first snapshot comes every after the newest one in
// the directory, at the soonest firstDelay after start, at the latest
// every after start (a clock put back).
func TestFirstDelay(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		every  time.Duration
		newest time.Duration // age of the newest snapshot; 0: none
		want   time.Duration
	}{
		{"none yet, hourly", time.Hour, 0, 30 * time.Second},
		{"none yet, every 10s", 10 * time.Second, 0, 10 * time.Second},
		{"newest 20 min old", time.Hour, 20 * time.Minute, 40 * time.Minute},
		{"newest overdue", time.Hour, 2 * time.Hour, 30 * time.Second},
		{"newest in the future", time.Hour, -3 * time.Hour, time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.newest != 0 {
				for _, age := range []time.Duration{tc.newest, tc.newest + 5*time.Hour} {
					require.NoError(t, os.WriteFile(filepath.Join(dir, Name(now.Add(-age))), nil, 0o600))
				}
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "receiptd-29991231T000000Z.db.tmp"), nil, 0o600))
			s := New(Config{Dir: dir, Every: tc.every, Keep: 3}, nil, zap.NewNop())
			s.now = func() time.Time { return now }
			require.Equal(t, tc.want, s.firstDelay())
		})
	}
}
