package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatusFleetOff: /receiptd/status always has "fleet"; without a push
// it says so, with the contract's keys.
func TestStatusFleetOff(t *testing.T) {
	e := newEnv(t, envOpts{noWorker: true})
	r := e.do(http.MethodGet, "/receiptd/status", "")
	require.Equal(t, http.StatusOK, r.code)
	f, ok := r.json(t)["fleet"].(map[string]any)
	require.True(t, ok, "%s", r.body)
	require.Equal(t, map[string]any{"enabled": false, "lastSuccess": nil, "bufferedSamples": float64(0),
		"oldestBuffered": nil, "droppedSamples": float64(0)}, f)
}
