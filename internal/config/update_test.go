package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A minisign public key (made for this test with aead.dev/minisign).
const testUpdateKey = "RWQEH4ELi0j8JizFK//9IvEPXxebNhqDNkQ3/oUGWXjCuw1HL0VuQLWw"

// TestUpdateKeys: [update] is off with no key; a key that is not a
// minisign public key is refused naming its position; neither key can be
// set by a head office nor changed in place.
func TestUpdateKeys(t *testing.T) {
	t.Parallel()
	require.Empty(t, Default().Update.TrustedKeys)
	requireRefused(t, "[update]\ntrusted_keys = [\""+testUpdateKey+"\", \"RWnotakey\"]\n", "update.trusted_keys[1]")
	requireRefused(t, "[update]\nkeep = 1\n", "update.keep")
	requireRefused(t, "[update]\nprobation = \"0s\"\n", "update.probation")
	requireRefused(t, "[update]\nwindow = \"2-5\"\n", "update.window")

	cfg := Default()
	cfg.Update.TrustedKeys = []string{testUpdateKey}
	require.NoError(t, cfg.Validate())
	require.ErrorContains(t, RestartChanges(Default(), cfg), "update.trusted_keys")
	require.NotEmpty(t, neverRemote("update.trusted_keys"))
	require.NotEmpty(t, neverRemote("update.allow_downgrade"))
	require.Empty(t, neverRemote("update.window"))
}

// TestWindowNext: inside the window a switch waits for nothing; outside,
// until the window opens, also across midnight.
func TestWindowNext(t *testing.T) {
	t.Parallel()
	at := func(h, m int) time.Time { return time.Date(2026, 11, 28, h, m, 0, 0, time.UTC) }
	night, err := ParseWindow("22:00-06:00")
	require.NoError(t, err)
	day, err := ParseWindow("02:00-05:00")
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		w    Window
		now  time.Time
		want time.Duration
	}{
		{"none", Window{}, at(12, 0), 0},
		{"inside", day, at(3, 0), 0},
		{"before", day, at(1, 30), 30 * time.Minute},
		{"after: tomorrow", day, at(5, 0), 21 * time.Hour},
		{"past midnight, late", night, at(23, 0), 0},
		{"past midnight, early", night, at(5, 59), 0},
		{"past midnight, outside", night, at(6, 0), 16 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.w.Next(c.now))
		})
	}
	_, err = ParseWindow("05:00-05:00")
	require.Error(t, err)
	_, err = ParseWindow("24:00-05:00")
	require.Error(t, err)
}
