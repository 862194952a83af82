package api_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/cache"
	"github.com/receiptd/receiptd/internal/control"
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

// TestFleetFailureReachesThePage: why the push fails, and since when,
// reach the page's head office block (before the first accepted push it
// says "not yet accepted", never that the head office receives the
// figures); /receiptd/status's fleet keeps the contract's keys.
func TestFleetFailureReachesThePage(t *testing.T) {
	since := time.Now().Add(-2 * time.Minute).UTC()
	e := newEnv(t, envOpts{noWorker: true, fleet: func() api.FleetState {
		return api.FleetState{Enabled: true, BufferedSamples: 16, OldestBuffered: since,
			LastError: "push to the head office: HTTP 503", FailingSince: since}
	}})
	page := string(e.do(http.MethodGet, "/", "").body)
	require.Regexp(t, `id="fleet"><span aria-hidden="true">✗</span> Not yet accepted by the head office: failing since (?:[0-9]{4}-[0-9]{2}-[0-9]{2} )?[0-9:]+ [A-Za-z0-9+-]+, 2m ago \(push to the head office: HTTP 503\)`, page)
	f := e.do(http.MethodGet, "/receiptd/status", "").json(t)["fleet"].(map[string]any)
	require.ElementsMatch(t, []string{"enabled", "lastSuccess", "bufferedSamples", "oldestBuffered", "droppedSamples"}, slices.Collect(maps.Keys(f)))
}

// TestControlStateReachesThePage: the channel's failure and its start
// reach the page's Head office section (one reading of the channel), and
// /receiptd/status's control keeps the contract's keys.
func TestControlStateReachesThePage(t *testing.T) {
	since := time.Now().Add(-time.Minute)
	e := newEnv(t, envOpts{noWorker: true, control: func() control.Status {
		return control.Status{URL: "wss://hq.example/v1/opamp", Started: since,
			LastError: "the head office refused the connection: invalid response from server: 401", FailingSince: since}
	}})
	page := string(e.do(http.MethodGet, "/", "").body)
	require.Regexp(t, `id="control"><span aria-hidden="true">✗</span> Not connected to the head office&#39;s management server \(OpAMP, wss://hq.example/v1/opamp\): failing since (?:[0-9]{4}-[0-9]{2}-[0-9]{2} )?[0-9:]+ [A-Za-z0-9+-]+, 1m ago \(the head office refused the connection: invalid response from server: 401\)`, page)
	c := e.do(http.MethodGet, "/receiptd/status", "").json(t)["control"].(map[string]any)
	require.ElementsMatch(t, []string{"url", "connected", "lastContact", "remoteConfig"}, slices.Collect(maps.Keys(c)))
}

// TestStatusControl: /receiptd/status always has "control", with the
// contract's keys; off, its url is empty and its times null.
func TestStatusControl(t *testing.T) {
	contact := time.Date(2026, 11, 27, 8, 30, 0, 0, time.UTC)
	applied := contact.Add(-time.Hour)
	for _, c := range []struct {
		name   string
		status func() control.Status
		want   map[string]any
	}{
		{"off", nil, map[string]any{"url": "", "connected": false, "lastContact": nil,
			"remoteConfig": map[string]any{"hash": "", "status": "", "message": "", "appliedAt": nil}}},
		{"applied", func() control.Status {
			return control.Status{URL: "wss://hq.example/v1/opamp", Connected: true, LastContact: contact,
				RemoteConfig: control.RemoteConfig{Hash: "ab12", Status: control.StatusApplied, AppliedAt: applied, ServerHash: "ff"}}
		}, map[string]any{"url": "wss://hq.example/v1/opamp", "connected": true, "lastContact": "2026-11-27T08:30:00Z",
			"remoteConfig": map[string]any{"hash": "ab12", "status": "APPLIED", "message": "", "appliedAt": "2026-11-27T07:30:00Z"}}},
		{"failed", func() control.Status {
			return control.Status{URL: "wss://hq.example/v1/opamp", RemoteConfig: control.RemoteConfig{Hash: "cd34",
				Status: control.StatusFailed, Message: "line 2: auth.token: can never be set remotely"}}
		}, map[string]any{"url": "wss://hq.example/v1/opamp", "connected": false, "lastContact": nil,
			"remoteConfig": map[string]any{"hash": "cd34", "status": "FAILED", "message": "line 2: auth.token: can never be set remotely", "appliedAt": nil}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envOpts{noWorker: true, control: c.status})
			r := e.do(http.MethodGet, "/receiptd/status", "")
			require.Equal(t, http.StatusOK, r.code)
			require.Equal(t, c.want, r.json(t)["control"], "%s", r.body)
		})
	}
}

func TestStatusLine(t *testing.T) {
	e := newEnv(t, envOpts{noWorker: true, control: func() control.Status {
		return control.Status{URL: "wss://hq.example/v1/opamp", Started: time.Now(),
			RemoteConfig: control.RemoteConfig{Status: control.StatusFailed, Message: "line 2: auth.token: can never be set remotely"}}
	}})
	line, err := e.srv.StatusLine(context.Background())
	require.NoError(t, err)
	require.Equal(t, "Needs attention: The head office's last configuration was not applied", line)
}

// TestStatusLineUnreachedSinceStart: the page's "not reached since
// receiptd started" takes the channel's start from the same reading of
// the channel as the rest of "control".
func TestStatusLineUnreachedSinceStart(t *testing.T) {
	e := newEnv(t, envOpts{noWorker: true, control: func() control.Status {
		return control.Status{URL: "wss://hq.example/v1/opamp", Started: time.Now().Add(-25 * time.Hour)}
	}})
	line, err := e.srv.StatusLine(context.Background())
	require.NoError(t, err)
	require.Contains(t, line, "The head office has not been reached since receiptd started")
}

// TestStatusReadsNoPageTables: /receiptd/status and the health line read
// none of what only the page's tables show (the warm set's readiness reads
// the store); the page does.
func TestStatusReadsNoPageTables(t *testing.T) {
	var reads atomic.Int32
	e := newEnv(t, envOpts{noWorker: true, warmth: func() cache.Warmth {
		reads.Add(1)
		return cache.Warmth{Wanted: 1}
	}})
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/receiptd/status", "").code)
	_, err := e.srv.StatusLine(context.Background())
	require.NoError(t, err)
	require.Zero(t, reads.Load(), "neither the alert nor the first line needs the warm set")
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/", "").code)
	require.Equal(t, int32(1), reads.Load(), "the page reads it once")
}
