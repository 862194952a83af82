package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFleetRefusals(t *testing.T) {
	for _, c := range []struct {
		name, toml, want string
	}{
		{"bad URL", "[fleet]\nremote_write_url = \"metrics.example/api/v1/write\"\n", "fleet.remote_write_url: needs http:// or https:// in front"},
		{"ftp URL", "[fleet]\nremote_write_url = \"ftp://metrics.example/\"\n", "fleet.remote_write_url: needs http:// or https:// in front, not \"ftp://\""},
		{"interval below 1s", "[fleet]\ninterval = \"500ms\"\n", "fleet.interval: must be at least 1s"},
		{"buffer below one interval", "[fleet]\ninterval = \"10m\"\nbuffer = \"5m\"\n", "fleet.buffer: must be at least one fleet.interval (10m0s)"},
		{"buffer_mb zero", "[fleet]\nbuffer_mb = 0\n", "fleet.buffer_mb: must be at least 1"},
		{"label with a dash", "[fleet.labels]\n\"shop-id\" = \"017\"\n", "fleet.labels.shop-id: is not a valid Prometheus label name"},
		{"label starting with a digit", "[fleet.labels]\n2till = \"2\"\n", "fleet.labels.2till: is not a valid Prometheus label name"},
		{"reserved label", "[fleet.labels]\n__name__ = \"x\"\n", "fleet.labels.__name__: label names starting with __ are reserved"},
		{"le label", "[fleet.labels]\nle = \"x\"\n", "fleet.labels.le: is a label of histogram"},
		{"empty label value", "[fleet.labels]\nshop = \"\"\n", "fleet.labels.shop: value must be a non-empty UTF-8 string"},
		{"bad header", "[fleet.headers]\n\"X Token\" = \"x\"\n", "fleet.headers.X Token: is not a valid HTTP header name"},
		{"bad proxy", "[fleet]\nproxy = \"gopher://p\"\n", "fleet.proxy: needs http://, https:// or socks5:// in front"},
		{"missing CA file", "[fleet]\nca_file = \"/nonexistent/ca.pem\"\n", "fleet.ca_file: cannot be used as a CA file: open /nonexistent/ca.pem"},
	} {
		t.Run(c.name, func(t *testing.T) { requireRefused(t, c.toml, c.want) })
	}
}

func TestFleetSection(t *testing.T) {
	cfg, err := load(writeConfig(t, `[fleet]
remote_write_url = "https://metrics.example/api/v1/write"
interval = "15s"
buffer = "48h"
buffer_mb = 16
[fleet.labels]
shop = "017"
till = "2"
[fleet.headers]
X-Scope-OrgID = "chain"
`), []string{EnvFleetHeaderPrefix + "AUTHORIZATION=Bearer from-env"})
	require.NoError(t, err)
	f := cfg.Fleet
	require.True(t, f.Enabled())
	require.Equal(t, 15*time.Second, f.Interval.Duration)
	require.Equal(t, 48*time.Hour, f.Buffer.Duration)
	require.Equal(t, 16, f.BufferMB)
	require.Equal(t, map[string]string{"shop": "017", "till": "2"}, f.Labels)
	require.Equal(t, map[string]string{"X-Scope-OrgID": "chain", "Authorization": "Bearer from-env"}, RevealAll(f.Headers))
	require.False(t, Default().Fleet.Enabled(), "off by default")
}
