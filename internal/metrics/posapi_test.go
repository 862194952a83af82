package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPosAPISeriesCarryThePosAPILabel: every receiptd_posapi_* series and
// send_data_total name the PosAPI they are about, so rules can alert once
// per PosAPI however many tills share it; an unknown figure is left out.
func TestPosAPISeriesCarryThePosAPILabel(t *testing.T) {
	t.Parallel()
	m := New()
	left, age, pace, share, skew := 150.0, 3600.0, 21600.0, 0.07, -2.0
	for _, tc := range []struct {
		name   string
		stats  PosAPIStats
		values map[string]float64 // family → value of its posapi="SIM-001" series
		absent []string
	}{
		{"all known", PosAPIStats{LeftLotteries: &left, LastSentAgeSeconds: &age, PacePerHour: &pace, OwnShare: &share,
			ClockSkewSeconds: &skew, SendDataOK: 2, SendDataFailed: 1, PosAPI: "SIM-001"},
			map[string]float64{"receiptd_posapi_left_lotteries": 150, "receiptd_posapi_last_sent_age_seconds": 3600,
				"receiptd_posapi_lottery_pace_per_hour": 21600, "receiptd_posapi_own_share": 0.07}, nil},
		{"pace and share unknown", PosAPIStats{LeftLotteries: &left, PosAPI: "SIM-001"},
			map[string]float64{"receiptd_posapi_left_lotteries": 150},
			[]string{"receiptd_posapi_lottery_pace_per_hour", "receiptd_posapi_own_share", "receiptd_posapi_last_sent_age_seconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m.WatchPosAPI(func() PosAPIStats { return tc.stats })
			fams := scrape(t, m.Handler())
			for name, want := range tc.values {
				require.Equal(t, want, value(t, fams, name, "posapi", "SIM-001"), name)
			}
			for _, name := range tc.absent {
				require.Nil(t, fams[name], name)
			}
			if tc.stats.ClockSkewSeconds != nil {
				require.Equal(t, *tc.stats.ClockSkewSeconds, value(t, fams, "receiptd_clock_skew_seconds"),
					"the clock is not PosAPI's: no posapi label")
			}
			require.Equal(t, float64(tc.stats.SendDataOK), value(t, fams, "receiptd_send_data_total", "posapi", "SIM-001", "result", "ok"))
			require.Equal(t, float64(tc.stats.SendDataFailed), value(t, fams, "receiptd_send_data_total", "posapi", "SIM-001", "result", "failed"))
		})
	}
}
