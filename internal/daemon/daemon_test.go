package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func testConfig(t testing.TB, upstream string) config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = upstream, upstream
	cfg.Sync.MinBackoff, cfg.Sync.MaxBackoff = config.Dur(20*time.Millisecond), config.Dur(100*time.Millisecond)
	return cfg
}

// TestMain removes the binary testkit.Binary built.
func TestMain(m *testing.M) { testkit.Main(m) }

// run starts d and returns a function that stops it and returns Run's error.
func run(t testing.TB, d *daemon.Daemon) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after cancel")
			return nil
		}
	}
}

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url+"/rest/receipt", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	return readResponse(t, resp)
}

func getBody(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	return readResponse(t, resp)
}

func readResponse(t *testing.T, resp *http.Response) (*http.Response, []byte) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func TestDaemonAcceptsAndDeliversThenStopsCleanly(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	d, err := daemon.New(testConfig(t, s.URL()), zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)

	resp, body := post(t, d.URL(), testkit.Receipt("d1"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NotEmpty(t, resp.Header.Get("X-Queue-Id"))
	require.Contains(t, string(body), s.Receipts()[0].Lottery)

	st, err := http.Get(d.URL() + "/receiptd/status")
	require.NoError(t, err)
	var status struct {
		Counts  map[string]int `json:"counts"`
		Version string         `json:"version"`
	}
	require.NoError(t, json.NewDecoder(st.Body).Decode(&status))
	st.Body.Close()
	require.Equal(t, 1, status.Counts["sent"])
	require.Equal(t, "test", status.Version)

	require.NoError(t, stop())
}

func TestSecondInstanceIsRefusedNamingTheFile(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "http://127.0.0.1:1")
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	_, err = daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.Error(t, err)
	require.Contains(t, err.Error(), d.DBPath())
}

func TestNonLoopbackWithoutTokenIsRefused(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Listen = "0.0.0.0:0"
	_, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.Error(t, err)
	require.Contains(t, err.Error(), "token")
}

func TestAcceptWaitZeroAnswersAtOnce(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 2, Latency: 2 * time.Second})
	cfg := testConfig(t, s.URL())
	cfg.Accept.Wait = config.Dur(0)
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	resp, body := post(t, d.URL(), testkit.Receipt("nowait"))
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "accept.wait = 0s never waits for the upstream: %s", body)
	require.NotEmpty(t, resp.Header.Get("X-Queue-Id"))
}
