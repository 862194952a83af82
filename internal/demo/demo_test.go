package demo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/config"
)

// Issue 32, point 9: the demo's first receipt is answered 200 while the
// simulator is up; the banner must not say it was 202.
func TestDemoBannerSaysWhatEachAnswerMeans(t *testing.T) {
	var out strings.Builder
	PrintHelp(&out, Banner{API: "http://127.0.0.1:7080", Sim: "http://127.0.0.1:7081", Sample: "r.json"})
	require.Contains(t, out.String(), "answered 200: the tax service issued it")
	require.Contains(t, out.String(), "answered 202: it is stored and queued")
	require.NotContains(t, out.String(), "answered 202 (the tax service down)")
	require.NotContains(t, out.String(), "goes down for", "no outage asked for")
}

// Issue 32, points 1 and 2: the demo's configs (none, and each walkthrough
// file under examples/demo) keep every upstream and fleet URL on loopback,
// and the file's own sections apply.
func TestDemoConfigsStayOnLoopback(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	files, err := filepath.Glob("../../examples/demo/*.toml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	mix := filepath.Join(t.TempDir(), "mix.toml")
	require.NoError(t, os.WriteFile(mix, []byte("[upstream]\nlookup_base_url = \"https://lookup.example\"\nproxy = \"http://proxy.example:3128\"\n"), 0o600))
	for _, file := range append([]string{"", mix}, files...) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			core, logs := observer.New(zap.InfoLevel)
			cfg, err := Config(Options{Listen: "127.0.0.1:0", Config: file}, t.TempDir(), "http://127.0.0.1:7081", zap.New(core))
			require.NoError(t, err)
			for key, u := range map[string]string{"upstream.base_url": cfg.Upstream.BaseURL,
				"upstream.lookup_base_url": cfg.Upstream.LookupBaseURL, "upstream.stock_base_url": cfg.Upstream.StockBaseURL} {
				require.True(t, config.IsLoopbackURL(u), "%s = %s leaves this computer", key, u)
			}
			require.Empty(t, cfg.Upstream.Proxy)
			if cfg.Fleet.RemoteWriteURL != "" {
				require.True(t, config.IsLoopbackURL(cfg.Fleet.RemoteWriteURL), cfg.Fleet.RemoteWriteURL)
			}
			require.Empty(t, cfg.Upstream.LiveLookups())
			if file == mix {
				require.Len(t, logs.FilterMessageSnippet("upstream.lookup_base_url = \"https://lookup.example\" is not used").All(), 1)
			}
		})
	}
	cfg, err := Config(Options{Listen: "127.0.0.1:0", Config: "../../examples/demo/fleet.toml"}, t.TempDir(), "http://127.0.0.1:7081", zap.NewNop())
	require.NoError(t, err)
	require.Equal(t, "demo", cfg.Fleet.Labels["shop"], "the file's [fleet] applies")
	require.Equal(t, 5*time.Second, cfg.Fleet.Interval.Duration)
	cfg, err = Config(Options{Listen: "127.0.0.1:0", Config: "../../examples/demo/posapi.toml"}, t.TempDir(), "http://127.0.0.1:7081", zap.NewNop())
	require.NoError(t, err)
	require.Equal(t, 200, cfg.PosAPI.MinLotteries, "the file's [posapi] applies")
	require.Equal(t, 10*time.Second, cfg.PosAPI.CheckEvery.Duration)
	require.Equal(t, 3*time.Second, cfg.Sync.MaxBackoff.Duration, "the demo's own defaults stay where the file is silent")
}

// A config file the demo cannot use is a UsageError (exit 2), naming the
// problem, not a failure of the run.
func TestDemoConfigRefusalIsAUsageError(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	bad := filepath.Join(t.TempDir(), "bad.toml")
	require.NoError(t, os.WriteFile(bad, []byte("[sync]\nconcurrency = -3\n"), 0o600))
	for _, file := range []string{bad, filepath.Join(t.TempDir(), "missing.toml")} {
		_, err := Config(Options{Listen: "127.0.0.1:0", Config: file}, t.TempDir(), "http://127.0.0.1:7081", zap.NewNop())
		var ue UsageError
		require.ErrorAs(t, err, &ue, file)
		require.False(t, ue.Misused, "the file is wrong, not the command line")
	}
}

// The README's walkthroughs post examples/demo/receipt.json and
// receipt-2.json: each is the demo's own sample receipt, byte for byte,
// under its own bill.
func TestWalkthroughReceiptIsTheDemosSample(t *testing.T) {
	for file, bill := range map[string]string{"receipt.json": "000001", "receipt-2.json": "000002"} {
		b, err := os.ReadFile("../../examples/demo/" + file)
		require.NoError(t, err)
		require.Equal(t, string(SampleReceipt(bill)), string(b), file)
	}
}
