package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMetricsTokenRules(t *testing.T) {
	for _, c := range []struct {
		name, toml, want string
	}{
		{"short", "[auth]\nmetrics_token = \"abc\"\n", "auth.metrics_token: must be at least 16 characters"},
		{"space", "[auth]\nmetrics_token = \"0123456789 abcdef\"\n", "auth.metrics_token: must not contain spaces"},
		{"same as token", "[auth]\ntoken = \"0123456789abcdef\"\nmetrics_token = \"0123456789abcdef\"\n", "auth.metrics_token: must differ from auth.token"},
	} {
		t.Run(c.name, func(t *testing.T) { requireRefused(t, c.toml, c.want) })
	}
	cfg, err := Load(writeConfig(t, "[auth]\nmetrics_token = \"scraper-key-0123456\"\n"))
	require.NoError(t, err, "a metrics token without auth.token is fine")
	require.Equal(t, "scraper-key-0123456", cfg.Auth.MetricsToken.Reveal())
}
