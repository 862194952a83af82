package control_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

const (
	secretToken  = "s3cret-token-0123456789"
	secretHeader = "Bearer s3cret-header"
)

// applier records what it was handed; it refuses configs whose
// accept.answer_count is 7, as a daemon not ready with them would.
type applier struct {
	mu    sync.Mutex
	got   []config.Config
	spans [][2]time.Time // when each Apply began and returned
	delay time.Duration  // how long an Apply takes, as a swap does
}

func (a *applier) Apply(_ context.Context, cfg config.Config) error {
	began := time.Now()
	a.mu.Lock()
	delay := a.delay
	a.mu.Unlock()
	time.Sleep(delay)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, cfg)
	a.spans = append(a.spans, [2]time.Time{began, time.Now()})
	if cfg.Accept.AnswerCount == 7 {
		return errors.New("not ready within control.rollback_after (backup: cannot create the snapshot folder)")
	}
	return nil
}

func (a *applier) times() [][2]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][2]time.Time(nil), a.spans...)
}

func (a *applier) calls() []config.Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]config.Config(nil), a.got...)
}

type till struct {
	client  *control.Client
	applier *applier
	ownPath string
	own     config.Config
}

// startTill writes a till's own file pointing at url, and runs its client
// until the test ends.
func startTill(t *testing.T, url string) *till { return startTillWith(t, url, namesQueuedAnswer) }

// namesQueuedAnswer is the default control.allow naming
// accept.queued_answer, which the tests set remotely: a head office sets
// it only where the till's own file names it.
const namesQueuedAnswer = `allow = ["accept", "sync", "alerts", "posapi", "fleet", "backup", "retention", "log", "accept.queued_answer"]`

// startTillWith is startTill with more [control] lines.
func startTillWith(t *testing.T, url, extra string) *till { return startTillOpts(t, url, extra, nil) }

// startTillOpts is startTillWith with the client's options changed by
// change (nil: as they are).
func startTillOpts(t *testing.T, url, extra string, change func(*control.Options)) *till {
	t.Helper()
	dir := t.TempDir()
	own := fmt.Sprintf(`data_dir = %q
[auth]
token = %q
[upstream.headers]
X-Api-Key = "s3cret-upstream"
[fleet.labels]
shop = "017"
till = "2"
[control]
opamp_url = %q
poll_every = "1s"
%s
[control.headers]
Authorization = %q
`, filepath.Join(dir, "data"), secretToken, url, extra, secretHeader)
	ownPath := filepath.Join(dir, "receiptd.toml")
	require.NoError(t, os.WriteFile(ownPath, []byte(own), 0o600))
	cfg, err := config.Load(ownPath)
	require.NoError(t, err)
	start, err := control.StartConfig(ownPath, cfg)
	require.NoError(t, err)
	tl := &till{applier: &applier{}, ownPath: ownPath, own: cfg}
	opts := control.Options{
		Start: start, OwnPath: ownPath, Version: "v9.9.9", Log: zaptest.NewLogger(t), Applier: tl.applier,
		HostName: "till-2.shop-017",
		PosNo:    func() string { return "POS-42" },
		// No wait between rebuilds but in the tests of the gate
		// (TestClientRateLimitsRebuilds): the others send configs in a row.
		ApplyEvery: time.Nanosecond,
		Health: func() control.Health {
			return control.Health{Healthy: false, Status: "Sending is stalled: 3 receipts wait.", Components: map[string]control.ComponentHealth{
				"upstream": {Healthy: false, Status: "down since 09:00"}, "queue": {Healthy: true, Status: "3 unsent"},
			}}
		},
	}
	if change != nil {
		change(&opts)
	}
	tl.client, err = control.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.client.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return tl
}

// agent waits until the server has seen the till and cond holds of it.
func agent(t *testing.T, srv *controltest.Server, uid string, cond func(controltest.Agent) bool) controltest.Agent {
	t.Helper()
	var a controltest.Agent
	require.Eventually(t, func() bool {
		var ok bool
		a, ok = srv.Agent(uid)
		return ok && cond(a)
	}, 15*time.Second, 20*time.Millisecond)
	return a
}

var transports = []struct {
	name string
	url  func(*controltest.Server) string
}{
	{"websocket", (*controltest.Server).WSURL},
	{"http polling", (*controltest.Server).HTTPURL},
}

func TestClientReports(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			tl := startTill(t, tr.url(srv))
			a := agent(t, srv, tl.client.InstanceUID(), func(a controltest.Agent) bool {
				return a.Description != nil && a.Health != nil && a.Effective != nil
			})
			uid, err := uuid.Parse(tl.client.InstanceUID())
			require.NoError(t, err)
			require.Equal(t, uuid.Version(7), uid.Version())
			for key, want := range map[string]string{
				"service.name": "receiptd", "service.version": "v9.9.9", "service.instance.id": uid.String(),
				"host.name": "till-2.shop-017", "shop": "017", "till": "2", "posNo": "POS-42",
			} {
				require.Equal(t, want, a.Attr(key), key)
			}
			require.NotEmpty(t, a.Attr("os.type"))
			require.Equal(t, secretHeader, a.Header.Get("Authorization"), "control.headers on the connection")

			require.False(t, a.Health.Healthy)
			require.Equal(t, "Sending is stalled: 3 receipts wait.", a.Health.Status)
			require.Equal(t, "down since 09:00", a.Health.ComponentHealthMap["upstream"].GetStatus())
			require.True(t, a.Health.ComponentHealthMap["queue"].GetHealthy())

			eff := string(a.Effective)
			require.Contains(t, eff, `token = "(set)"`)
			for _, secret := range []string{secretToken, secretHeader, "s3cret"} {
				require.NotContains(t, eff, secret)
			}
			var back config.Config
			_, err = toml.Decode(eff, &back)
			require.NoError(t, err, "the effective config is TOML")
			require.Equal(t, tl.own.Fleet.Labels, back.Fleet.Labels)

			require.Eventually(t, func() bool {
				s := tl.client.Status()
				return s.Connected && !s.LastContact.IsZero() && s.URL == tr.url(srv)
			}, 5*time.Second, 20*time.Millisecond)
		})
	}
}

func TestClientRemoteConfig(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			tl := startTill(t, tr.url(srv))
			uid := tl.client.InstanceUID()
			agent(t, srv, uid, func(a controltest.Agent) bool { return a.Description != nil })
			this := func(a controltest.Agent) bool { return a.UID == uid }

			good := "[accept]\nqueued_answer = \"error\"\n[fleet.labels]\ngroup = \"north\"\n"
			hash, n := srv.SetConfig(this, good)
			require.Equal(t, 1, n)
			a := waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
			calls := tl.applier.calls()
			require.Len(t, calls, 1)
			require.Equal(t, config.QueuedAnswerError, calls[0].Accept.QueuedAnswer)
			s := tl.client.Status()
			require.Equal(t, control.StatusApplied, s.RemoteConfig.Status)
			require.Equal(t, config.FragmentHash([]byte(good)), s.RemoteConfig.Hash)
			require.False(t, s.RemoteConfig.AppliedAt.IsZero())
			require.Eventually(t, func() bool {
				a, _ = srv.Agent(uid)
				return strings.Contains(string(a.Effective), `queued_answer = "error"`) && a.Attr("group") == "north"
			}, 10*time.Second, 20*time.Millisecond, "the effective config and description follow")

			requireKept(t, tl, "received.toml", good)
			requireKept(t, tl, "good.toml", good)

			restarted, err := control.StartConfig(tl.ownPath, tl.own)
			require.NoError(t, err)
			require.Equal(t, config.QueuedAnswerError, restarted.Config.Accept.QueuedAnswer, "a start uses the applied fragment")

			for _, bad := range []struct{ fragment, want string }{
				{"[accept]\n\nqueued_answer = \"maybe\"\n", "line 3: accept.queued_answer: must be one of 202, error"},
				{"[auth]\ntoken = \"0123456789abcdef-remote\"\n", "line 2: auth.token: can never be set remotely"},
				{"[upstream]\ntimeout = \"5s\"\n", "line 2: upstream.timeout: is not in control.allow"},
				{"[accept]\nanswer_count = 7\n", "not applied, the previous configuration is back: not ready"},
			} {
				hash, _ := srv.SetConfig(this, bad.fragment)
				a = waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED)
				require.Contains(t, a.RemoteStatus.ErrorMessage, bad.want)
				s := tl.client.Status()
				require.Equal(t, control.StatusFailed, s.RemoteConfig.Status)
				require.Contains(t, s.RemoteConfig.Message, bad.want)
			}
			requireKept(t, tl, "received.toml", "[accept]\nanswer_count = 7\n")
			requireKept(t, tl, "good.toml", good)
			require.Len(t, tl.applier.calls(), 2, "only the good fragment and the one the daemon refused reached the Applier")
			require.EqualValues(t, 4, tl.client.Status().Failures)
			kept, err := control.StartConfig(tl.ownPath, tl.own)
			require.NoError(t, err)
			require.Equal(t, config.QueuedAnswerError, kept.Config.Accept.QueuedAnswer, "refused fragments leave the last good one")
			require.Equal(t, 10000, kept.Config.Accept.AnswerCount)

			hash, _ = srv.SetConfig(this, "")
			waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
			calls = tl.applier.calls()
			require.Equal(t, config.QueuedAnswer202, calls[len(calls)-1].Accept.QueuedAnswer, "an empty fragment is the own file")
		})
	}
}

// requireKept requires <data_dir>/control/name to hold want, as the
// contract says: the fragment received in received.toml, refused or not;
// the one applied last in good.toml.
func requireKept(t *testing.T, tl *till, name, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(layout.Control(tl.own.DataDir), name))
	require.NoError(t, err)
	require.Equal(t, want, string(got), name)
}

func waitStatus(t *testing.T, srv *controltest.Server, uid string, hash []byte, want protobufs.RemoteConfigStatuses) controltest.Agent {
	t.Helper()
	return agent(t, srv, uid, func(a controltest.Agent) bool {
		rs := a.RemoteStatus
		return rs != nil && string(rs.LastRemoteConfigHash) == string(hash) && rs.Status == want
	})
}

// TestClientOverTLS: wss:// and https:// with control.ca_file trusting the
// server's own certificate; without it the till does not connect.
func TestClientOverTLS(t *testing.T) {
	srv, caFile := controltest.StartTLS(t)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			url := tr.url(srv)
			require.Regexp(t, "^(wss|https)://", url)
			trusted := startTillWith(t, url, fmt.Sprintf("ca_file = %q", caFile))
			agent(t, srv, trusted.client.InstanceUID(), func(a controltest.Agent) bool { return a.Effective != nil })

			untrusted := startTill(t, url)
			time.Sleep(2 * time.Second) // a few attempts
			_, seen := srv.Agent(untrusted.client.InstanceUID())
			require.False(t, seen, "a server whose certificate the till does not trust is not talked to")
			require.False(t, untrusted.client.Status().Connected)
		})
	}
}

// TestClientNoticesALostServer: Connected turns false once the server
// stops answering, whatever the transport, and the till reconnects and
// takes configs again when it is back.
func TestClientNoticesALostServer(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			tl := startTill(t, tr.url(srv))
			require.Eventually(t, func() bool { return tl.client.Status().Connected }, 10*time.Second, 20*time.Millisecond)
			contact := tl.client.Status().LastContact
			srv.Stop()
			require.Eventually(t, func() bool { return !tl.client.Status().Connected }, 10*time.Second, 50*time.Millisecond)
			connected, last, _ := tl.client.Stats()
			require.False(t, connected)
			require.InDelta(t, float64(contact.UnixNano())/1e9, last, 5, "the last contact stays, for the metric and the status page")

			srv.Restart(t)
			require.Eventually(t, func() bool { return tl.client.Status().Connected }, 20*time.Second, 50*time.Millisecond, "back when the server is")
			hash, n := srv.SetConfig(func(a controltest.Agent) bool { return a.UID == tl.client.InstanceUID() }, "[log]\nlevel = \"debug\"\n")
			require.Equal(t, 1, n)
			waitStatus(t, srv, tl.client.InstanceUID(), hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
		})
	}
}

// TestClientDoesNotReapplyAResentConfig: a server that resends the config
// with every answer, while the till applies it and after, gets it
// applied once, and its status reported, not a till that re-applies in
// a loop.
func TestClientDoesNotReapplyAResentConfig(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			srv.ResendAlways()
			tl := startTill(t, tr.url(srv))
			tl.applier.mu.Lock()
			tl.applier.delay = time.Second // long enough for the server to resend it while APPLYING
			tl.applier.mu.Unlock()
			uid := tl.client.InstanceUID()
			agent(t, srv, uid, func(a controltest.Agent) bool { return a.Description != nil })
			this := func(a controltest.Agent) bool { return a.UID == uid }

			hash, _ := srv.SetConfig(this, "[accept]\nqueued_answer = \"error\"\n")
			waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
			seen, _ := srv.Agent(uid)
			require.Eventually(t, func() bool {
				a, _ := srv.Agent(uid)
				return a.Messages >= seen.Messages+3
			}, 15*time.Second, 50*time.Millisecond, "the server resends the config on a few more answers")
			require.Equal(t, 1, len(tl.applier.calls()), "applied once, however often it was resent")
			a, _ := srv.Agent(uid)
			require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, a.RemoteStatus.GetStatus())
			require.EqualValues(t, 0, tl.client.Status().Failures)

			hash, _ = srv.SetConfig(this, "[accept]\nqueued_answer = \"maybe\"\n")
			waitStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED)
			seen, _ = srv.Agent(uid)
			require.Eventually(t, func() bool {
				a, _ := srv.Agent(uid)
				return a.Messages >= seen.Messages+3
			}, 15*time.Second, 50*time.Millisecond)
			require.EqualValues(t, 1, tl.client.Status().Failures, "a refused config resent is not checked and counted again")
		})
	}
}

// TestClientSendsWhatChangedAfterTheFirstReport: PosAPI's posNo learnt
// just after the client made its first report (the daemon reads PosAPI's
// info as the channel connects) reaches the server: the description is
// compared with the one last sent, not with one read later.
func TestClientSendsWhatChangedAfterTheFirstReport(t *testing.T) {
	t.Parallel()
	srv := controltest.Start(t)
	var calls atomic.Int64
	tl := startTillOpts(t, srv.WSURL(), "", func(o *control.Options) {
		o.PosNo = func() string {
			if calls.Add(1) == 1 {
				return "" // the first report: not read yet
			}
			return "POS-42"
		}
	})
	agent(t, srv, tl.client.InstanceUID(), func(a controltest.Agent) bool { return a.Attr("posNo") == "POS-42" })
}

// Issue 40, item 3: Status says why the channel is not connected and
// since when, from the first failed attempt (nothing listening; a server
// that refuses the till, HTTP 401), and forgets it once the server
// answers, so the status page tells connecting, refused and connected
// apart from the start.
func TestClientStatusSaysWhyItIsNotConnected(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad token", http.StatusUnauthorized)
	}))
	t.Cleanup(refusing.Close)
	for _, tc := range []struct{ name, url, want string }{
		{"nothing listening", "ws://" + testkit.ClosedAddr(t) + "/v1/opamp", "refused"},
		{"refused, http polling", refusing.URL + "/v1/opamp", "401"},
		{"refused, websocket", "ws://" + refusing.Listener.Addr().String() + "/v1/opamp", "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := startTill(t, tc.url)
			require.Eventually(t, func() bool { return strings.Contains(tl.client.Status().LastError, tc.want) }, 10*time.Second, 20*time.Millisecond)
			st := tl.client.Status()
			require.False(t, st.FailingSince.IsZero())
			require.True(t, st.LastContact.IsZero())
			require.False(t, st.Connected)
		})
	}

	srv := controltest.Start(t)
	tl := startTill(t, srv.WSURL())
	require.Eventually(t, func() bool { return tl.client.Status().Connected }, 10*time.Second, 20*time.Millisecond)
	srv.Stop()
	require.Eventually(t, func() bool { return tl.client.Status().LastError != "" }, 10*time.Second, 50*time.Millisecond)
	since := tl.client.Status().FailingSince
	require.False(t, since.IsZero())
	srv.Restart(t)
	require.Eventually(t, func() bool { return tl.client.Status().Connected }, 20*time.Second, 50*time.Millisecond)
	st := tl.client.Status()
	require.Empty(t, st.LastError, "an answer clears the failure")
	require.True(t, st.FailingSince.IsZero())
}
