package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPosAPIValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*PosAPI)
		key    string // "" means valid
	}{
		{"defaults", func(*PosAPI) {}, ""},
		{"auto send off", func(p *PosAPI) { p.AutoSendData = false }, ""},
		{"min lotteries zero", func(p *PosAPI) { p.MinLotteries = 0 }, ""},
		{"check too often", func(p *PosAPI) { p.CheckEvery = Dur(time.Second) }, "posapi.check_every"},
		{"send after zero", func(p *PosAPI) { p.SendAfter = Dur(0) }, "posapi.send_after"},
		{"min lotteries negative", func(p *PosAPI) { p.MinLotteries = -1 }, "posapi.min_lotteries"},
		{"min lotteries huge", func(p *PosAPI) { p.MinLotteries = 1_000_001 }, "posapi.min_lotteries"},
		{"send every below a second", func(p *PosAPI) { p.SendEvery = Dur(time.Millisecond) }, "posapi.send_every"},
		{"skew zero", func(p *PosAPI) { p.MaxClockSkew = Dur(0) }, "posapi.max_clock_skew"},
		{"no spread", func(p *PosAPI) { p.SendSpread = Dur(0) }, ""},
		{"spread negative", func(p *PosAPI) { p.SendSpread = Dur(-time.Second) }, "posapi.send_spread"},
		{"spread too long", func(p *PosAPI) { p.SendSpread = Dur(10*time.Minute + time.Second) }, "posapi.send_spread"},
		{"refill before under a minute", func(p *PosAPI) { p.RefillBefore = Dur(30 * time.Second) }, "posapi.refill_before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.change(&c.PosAPI)
			err := c.Validate()
			if tc.key == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var ke *KeyError
			require.ErrorAs(t, err, &ke)
			require.Equal(t, tc.key, ke.Key)
		})
	}
}

func TestPosAPIFromFile(t *testing.T) {
	path := writeConfig(t, "[posapi]\ncheck_every = \"1m\"\nauto_send_data = false\nmin_lotteries = 50\n")
	c, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, time.Minute, c.PosAPI.CheckEvery.Duration)
	require.False(t, c.PosAPI.AutoSendData)
	require.Equal(t, 50, c.PosAPI.MinLotteries)
	require.Equal(t, 12*time.Hour, c.PosAPI.SendAfter.Duration, "keys left out keep their default")
	require.Equal(t, 30*time.Second, c.PosAPI.SendSpread.Duration)
	require.Equal(t, 2*time.Hour, c.PosAPI.RefillBefore.Duration)

	_, err = Load(writeConfig(t, "[posapi]\nsend_evry = \"1h\"\n"))
	require.ErrorContains(t, err, "posapi.send_evry")
}
