package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDialable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1:7080":   "127.0.0.1:7080",
		"0.0.0.0:7080":     "127.0.0.1:7080",
		":7080":            "127.0.0.1:7080",
		"[::]:7080":        "[::1]:7080",
		"till.lan:7080":    "till.lan:7080",
		"192.168.1.5:7080": "192.168.1.5:7080",
	} {
		require.Equal(t, want, Dialable(in), in)
	}
}
