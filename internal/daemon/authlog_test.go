package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
)

// TestFailedAuthenticationIsLoggedAndCounted: 2,000 wrong guesses at the
// token leave one log line (rate-limited) that counts them without any
// token in it, and every one is in the metrics by reason.
func TestFailedAuthenticationIsLoggedAndCounted(t *testing.T) {
	t.Parallel()
	const token = "the-real-token-0123456789"
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Auth.Token = config.NewSecret(token)
	core, logs := observer.New(zap.InfoLevel)
	d, err := daemon.New(cfg, zap.New(core), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	get := func(path, auth string) int {
		req, err := http.NewRequest(http.MethodGet, d.URL()+path, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const guesses = 2000
	for i := range guesses {
		require.Equal(t, http.StatusUnauthorized, get("/receiptd/status", fmt.Sprintf("Bearer guess-%06d", i)))
	}
	require.Equal(t, http.StatusUnauthorized, get("/receiptd/status", ""))
	require.Equal(t, http.StatusUnauthorized, get("/receiptd/status", "Basic Z3Vlc3M="))

	lines := logs.FilterMessageSnippet("failed authentication").All()
	require.Len(t, lines, 1, "one line per minute, however many guesses")
	require.Equal(t, "wrong", lines[0].ContextMap()["reason"])
	require.EqualValues(t, 1, lines[0].ContextMap()["failures"])
	for _, l := range logs.All() {
		text := fmt.Sprint(l.Message, l.ContextMap())
		require.NotContains(t, text, "guess-", "a guessed token was logged")
		require.NotContains(t, text, token)
		require.NotContains(t, text, "Z3Vlc3M")
	}

	req, err := http.NewRequest(http.MethodGet, d.URL()+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	m := string(body)
	require.Contains(t, m, fmt.Sprintf(`receiptd_auth_failures_total{reason="wrong"} %d`, guesses))
	require.Contains(t, m, `receiptd_auth_failures_total{reason="missing"} 1`)
	require.Contains(t, m, `receiptd_auth_failures_total{reason="malformed"} 1`)
	require.False(t, strings.Contains(m, "guess-"))
}
