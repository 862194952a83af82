package controltest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control/controltest"
)

// agent is a bare opamp-go agent: it reports its shop and till labels and
// reports every remote config it gets as APPLIED.
type agent struct {
	uid string
	oc  client.OpAMPClient

	mu  sync.Mutex
	got []string // the receiptd.toml bodies received
}

// startAgent connects an agent with the labels shop and till to url, over
// WebSocket for ws:// and HTTP polling (every 100 ms) for http://, until
// the test ends.
func startAgent(t *testing.T, url, shop, till string) *agent {
	t.Helper()
	uid := uuid.Must(uuid.NewV7())
	a := &agent{uid: uid.String()}
	if strings.HasPrefix(url, "ws") {
		a.oc = client.NewWebSocket(nil)
	} else {
		a.oc = client.NewHTTP(nil)
	}
	str := func(k, v string) *protobufs.KeyValue {
		return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
	}
	require.NoError(t, a.oc.SetAgentDescription(&protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{str("service.name", "test-agent")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{str("shop", shop), str("till", till)},
	}))
	caps := protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat
	require.NoError(t, a.oc.SetCapabilities(&caps))
	poll := 100 * time.Millisecond
	require.NoError(t, a.oc.Start(context.Background(), types.StartSettings{
		OpAMPServerURL:    url,
		InstanceUid:       types.InstanceUid(uid),
		HeartbeatInterval: &poll,
		Callbacks:         types.Callbacks{OnMessage: a.onMessage},
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, a.oc.Stop(ctx))
	})
	return a
}

func (a *agent) onMessage(_ context.Context, msg *types.MessageData) {
	rc := msg.RemoteConfig
	if rc == nil {
		return
	}
	a.mu.Lock()
	a.got = append(a.got, string(rc.GetConfig().GetConfigMap()["receiptd.toml"].GetBody()))
	a.mu.Unlock()
	_ = a.oc.SetRemoteConfigStatus(&protobufs.RemoteConfigStatus{
		LastRemoteConfigHash: rc.ConfigHash,
		Status:               protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED,
	})
}

func (a *agent) received() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}

// seen waits until srv has a message from a with its description.
func seen(t *testing.T, srv *controltest.Server, a *agent) controltest.Agent {
	t.Helper()
	var got controltest.Agent
	require.Eventually(t, func() bool {
		var ok bool
		got, ok = srv.Agent(a.uid)
		return ok && got.Attr("till") != ""
	}, 10*time.Second, 10*time.Millisecond, "the server sees agent %s", a.uid)
	return got
}

var transports = []struct {
	name string
	url  func(*controltest.Server) string
	ws   bool
}{
	{"websocket", (*controltest.Server).WSURL, true},
	{"http polling", (*controltest.Server).HTTPURL, false},
}

// TestAttrIsPicksOneShop: a config set for one shop's label reaches its
// agents and no other; Count, ByAttr and each agent's status and
// transport say so.
func TestAttrIsPicksOneShop(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			agents := []*agent{
				startAgent(t, tr.url(srv), "S1", "T1"), startAgent(t, tr.url(srv), "S1", "T2"),
				startAgent(t, tr.url(srv), "S2", "T3"),
			}
			for _, a := range agents {
				require.Equal(t, tr.ws, seen(t, srv, a).WebSocket(), "the transport of %s", a.uid)
			}
			require.Equal(t, 2, srv.Count(controltest.AttrIs("shop", "S1")))
			require.Zero(t, srv.Count(controltest.AttrIs("shop", "S9")))

			hash, n := srv.SetConfig(controltest.AttrIs("shop", "S1"), "[log]\nlevel = \"debug\"\n")
			require.Equal(t, 2, n)
			applied := func(a controltest.Agent) bool {
				return a.RemoteStatus.GetStatus() == protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED &&
					string(a.RemoteStatus.GetLastRemoteConfigHash()) == string(hash)
			}
			require.Eventually(t, func() bool { return srv.Count(applied) == 2 }, 10*time.Second, 10*time.Millisecond,
				"S1's agents report APPLIED:\n%s", srv.Summary("shop", "till"))
			byTill := srv.ByAttr("till")
			require.Len(t, byTill, 3)
			require.True(t, applied(byTill["T1"]) && applied(byTill["T2"]))
			require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_UNSET, byTill["T3"].RemoteStatus.GetStatus())
			require.Equal(t, []string{"[log]\nlevel = \"debug\"\n"}, agents[0].received())
			require.Empty(t, agents[2].received(), "shop S2 gets nothing")
		})
	}
}

// TestLastSeenMovesWithEachMessage: LastSeen is the time of the agent's
// latest message, and stops while the server is down.
func TestLastSeenMovesWithEachMessage(t *testing.T) {
	t.Parallel()
	srv := controltest.Start(t)
	a := startAgent(t, srv.HTTPURL(), "S1", "T1")
	first := seen(t, srv, a).LastSeen
	require.WithinDuration(t, time.Now(), first, 5*time.Second)
	require.Eventually(t, func() bool {
		got, _ := srv.Agent(a.uid)
		return got.LastSeen.After(first)
	}, 5*time.Second, 10*time.Millisecond, "the next poll moves it")

	srv.Stop()
	stopped := time.Now()
	time.Sleep(300 * time.Millisecond) // three polls
	got, _ := srv.Agent(a.uid)
	require.True(t, got.LastSeen.Before(stopped), "no message while stopped: last seen %s", got.LastSeen)
	require.Contains(t, srv.Summary("till"), "till=T1 uid="+a.uid+" http ")
}

// TestSetConfigWhileStopped: a config set while the server is down (no
// connection to push it on) reaches the agent after Restart, over both
// transports.
func TestSetConfigWhileStopped(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			a := startAgent(t, tr.url(srv), "S1", "T1")
			seen(t, srv, a)
			srv.Stop()
			_, n := srv.SetConfig(controltest.AttrIs("till", "T1"), "[log]\nlevel = \"warn\"\n")
			require.Equal(t, 1, n)
			require.Empty(t, a.received())
			srv.Restart(t)
			require.Eventually(t, func() bool { return len(a.received()) > 0 }, 20*time.Second, 20*time.Millisecond,
				"the agent gets the config once the server is back")
			require.Equal(t, "[log]\nlevel = \"warn\"\n", a.received()[0])
		})
	}
}
