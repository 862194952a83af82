package main

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// lockedBuffer collects run's output, read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var announced = regexp.MustCompile(`tills connect to (wss?://\S+); the tills and config pushes at (http://\S+)/`)

// startOffice runs the head office on free ports until the test ends and
// returns its OpAMP URL and admin base URL; args are more flags.
func startOffice(t *testing.T, args ...string) (opamp, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0"}, args...), out)
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	var m []string
	require.Eventually(t, func() bool { m = announced.FindStringSubmatch(out.String()); return m != nil },
		10*time.Second, 10*time.Millisecond, "the head office never said where it listens: %s", out.String())
	return m[1], m[2]
}

func tills(t *testing.T, admin string) []Till {
	t.Helper()
	resp, err := http.Get(admin + "/tills")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out []Till
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

func push(t *testing.T, admin, query, fragment string) (status int, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, admin+"/config?"+query, strings.NewReader(fragment))
	require.NoError(t, err)
	return do(t, req)
}

// TestHeadOfficeManagesRealTills runs the example against two real
// receiptd processes of two shops: both are listed with their labels and
// version; a fragment pushed to one shop is APPLIED there and changes
// nothing at the other; one that sets what a head office may never set
// is FAILED, naming the key, and the till goes on as it was.
func TestHeadOfficeManagesRealTills(t *testing.T) {
	ctx := context.Background()
	opamp, admin := startOffice(t)
	up := sim.New(sim.Options{Seed: 11})
	require.NoError(t, up.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = up.Close() })
	bin, err := harness.Build(ctx, t.TempDir())
	require.NoError(t, err)

	procs := map[string]*harness.Process{}
	for _, shop := range []string{"017", "018"} {
		cfg := config.Default()
		cfg.DataDir, cfg.Listen = t.TempDir(), "127.0.0.1:0"
		cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = up.URL(), up.URL()
		cfg.Fleet.Labels = map[string]string{"shop": shop}
		cfg.Control.OpAMPURL = opamp
		cfg.Control.PollEvery = config.Dur(time.Second)
		p, err := harness.Start(ctx, bin, t.TempDir(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Stop(context.Background()) })
		require.NoError(t, p.WaitReady(ctx))
		procs[shop] = p
	}
	byShop := func() map[string]Till {
		out := map[string]Till{}
		for _, tl := range tills(t, admin) {
			out[tl.Labels["shop"]] = tl
		}
		return out
	}
	require.Eventually(t, func() bool { return len(byShop()) == 2 }, 20*time.Second, 50*time.Millisecond,
		"both tills are listed: %+v", tills(t, admin))
	for _, tl := range byShop() {
		require.NotEmpty(t, tl.Version)
		require.NotEmpty(t, tl.Host)
	}

	code, body := push(t, admin, "shop=017", "[sync]\nconcurrency = 3\n")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"tills":1`)
	require.Eventually(t, func() bool { return byShop()["017"].Config.Status == "APPLIED" }, 30*time.Second, 50*time.Millisecond,
		"shop 017 applies its config: %+v", byShop()["017"])
	require.Contains(t, []string{"", "UNSET"}, byShop()["018"].Config.Status, "the other shop got nothing")
	require.Equal(t, "APPLIED", remoteStatus(t, procs["017"]), "the till says so too")

	code, body = push(t, admin, "shop=018", "listen = \"0.0.0.0:7080\"\n")
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { return byShop()["018"].Config.Status == "FAILED" }, 30*time.Second, 50*time.Millisecond,
		"a fragment setting listen is refused: %+v", byShop()["018"])
	require.Contains(t, byShop()["018"].Config.Message, "listen")
	resp, err := http.Get(procs["018"].URL() + "/readyz")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "the till goes on as it was")

	code, body = push(t, admin, "shop=999", "[sync]\nconcurrency = 4\n")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"tills":0`, "no till of shop 999 yet")
	req, err := http.NewRequest(http.MethodDelete, admin+"/config?shop=999", nil)
	require.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "the rule for tills not seen yet was kept")
}

// remoteStatus is the remote config's status as the till's own
// /receiptd/status reports it.
func remoteStatus(t *testing.T, p *harness.Process) string {
	t.Helper()
	resp, err := http.Get(p.URL() + "/receiptd/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st struct {
		Control struct {
			RemoteConfig struct {
				Status string `json:"status"`
			} `json:"remoteConfig"`
		} `json:"control"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st.Control.RemoteConfig.Status
}

// TestPutConfigRefusesAnOversizedFragment: more than receiptd would take
// is refused at the head office, and nothing is set.
func TestPutConfigRefusesAnOversizedFragment(t *testing.T) {
	_, admin := startOffice(t)
	code, _ := push(t, admin, "", strings.Repeat("#", maxFragment+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	req, err := http.NewRequest(http.MethodDelete, admin+"/config", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "no rule was set")
}
