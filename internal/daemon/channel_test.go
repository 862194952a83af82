package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/config"

	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/fleet/fleettest"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// waitRemoteStatus waits until the server has the till's status of the
// config with hash.
func waitRemoteStatus(t *testing.T, srv *controltest.Server, uid string, hash []byte, want protobufs.RemoteConfigStatuses) controltest.Agent {
	t.Helper()
	var a controltest.Agent
	require.Eventually(t, func() bool {
		a, _ = srv.Agent(uid)
		rs := a.RemoteStatus
		return rs != nil && string(rs.LastRemoteConfigHash) == string(hash) && rs.Status == want
	}, 30*time.Second, 20*time.Millisecond, "%s of %x", want, hash)
	return a
}

// runManagedFile starts NewManaged on an own file written from upstream,
// the OpAMP URL and extra TOML lines (data_dir and listen the test's), so
// that a remote fragment merges over it as on a till.
func runManagedFile(t *testing.T, upstream, opampURL, extra string) *daemon.Supervisor {
	t.Helper()
	own := fmt.Sprintf(`data_dir = %q
listen = "127.0.0.1:0"
%s
[upstream]
base_url = %q
lookup_base_url = %q
[sync]
min_backoff = "20ms"
max_backoff = "100ms"
[control]
opamp_url = %q
poll_every = "1s"
`, t.TempDir(), extra, upstream, upstream, opampURL)
	path := filepath.Join(t.TempDir(), "receiptd.toml")
	require.NoError(t, os.WriteFile(path, []byte(own), 0o600))
	cfg, err := config.Load(path)
	require.NoError(t, err)
	s, err := daemon.NewManaged(cfg, path, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	return serveSupervisor(t, s)
}

// TestManagedRefusesAHugeMessage: a head office sending a 64 MiB message
// (a config map of that size) gets the connection cut once the message's
// length is known, over both transports: what the server managed to write
// before that is the sockets' buffers, not the message (before, the till
// read it whole, then refused the fragment). The till takes sales
// meanwhile, and the channel applies a normal config after.
func TestManagedRefusesAHugeMessage(t *testing.T) {
	huge := "# " + strings.Repeat("x", 64<<20) + "\n"
	for _, tr := range []struct {
		name string
		url  func(*controltest.Server) string
	}{
		{"websocket", (*controltest.Server).WSURL},
		{"http polling", (*controltest.Server).HTTPURL},
	} {
		t.Run(tr.name, func(t *testing.T) {
			s := testkit.StartSim(t, sim.Options{Seed: 61})
			srv := controltest.Start(t)
			sup := runManagedFile(t, s.URL(), tr.url(srv), "")
			uid := sup.Control().InstanceUID()
			this := func(a controltest.Agent) bool { return a.UID == uid }
			require.Eventually(t, func() bool { _, ok := srv.Agent(uid); return ok }, 20*time.Second, 20*time.Millisecond)

			srv.SetConfig(this, huge)
			seen, _ := srv.Agent(uid)
			for i := range 3 {
				resp, body := post(t, sup.URL(), testkit.Receipt(fmt.Sprintf("huge%d", i)))
				require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
			}
			require.Eventually(t, func() bool {
				a, _ := srv.Agent(uid)
				return a.Messages >= seen.Messages+2
			}, 30*time.Second, 50*time.Millisecond, "the till connects again after the cut")
			require.Less(t, srv.MaxSent(), int64(16<<20), "the till stopped reading once the message's length was known")
			a, _ := srv.Agent(uid)
			require.NotEqual(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, a.RemoteStatus.GetStatus(),
				"the message was never read, so no config was refused")

			hash, _ := srv.SetConfig(this, "[sync]\nconcurrency = 3\n")
			waitRemoteStatus(t, srv, uid, hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED)
			resp, body := post(t, sup.URL(), testkit.Receipt("after"))
			require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		})
	}
}

// TestSwapKeepsWhatPosAPISaid: a config applied in place does not read
// PosAPI's /rest/info again at once when the last read is recent (it was
// read moments before), and /receiptd/status keeps receiptd's last
// sendData: the new Daemon's watcher goes on from the old one's. Before,
// the new watcher knew nothing: it read /rest/info at once, and
// lastSendData was null until its own next call.
func TestSwapKeepsWhatPosAPISaid(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 62, Lotteries: 150}) // under min_lotteries: receiptd sends the data
	cfg := testConfig(t, s.URL())
	cfg.PosAPI.SendSpread = config.Dur(0)
	cfg.PosAPI.SendEvery = config.Dur(time.Hour)
	sup := runSupervisor(t, cfg, 10*time.Second)
	require.Eventually(t, func() bool { return string(readStatus(t, sup.URL()).PosAPI["lastSendData"]) != "null" },
		20*time.Second, 20*time.Millisecond, "receiptd sent PosAPI's data")
	// Swap just after a read: the next is at least 10 s away (posapi's
	// shortest gap between reads), so any read now is the swap's.
	reads := s.Requests(sim.RouteInfo)
	require.Eventually(t, func() bool { return s.Requests(sim.RouteInfo) > reads }, 30*time.Second, 10*time.Millisecond)
	before := readStatus(t, sup.URL()).PosAPI
	reads, sends := s.Requests(sim.RouteInfo), s.SendDataCalls()

	next := cfg
	next.Accept.QueuedAnswer = config.QueuedAnswerError
	require.NoError(t, sup.Apply(context.Background(), next))
	require.Never(t, func() bool { return s.Requests(sim.RouteInfo) > reads }, 2*time.Second, 20*time.Millisecond,
		"no /rest/info read at once after the swap: the next is at least 10 s away")
	after := readStatus(t, sup.URL()).PosAPI
	require.JSONEq(t, string(before["lastSendData"]), string(after["lastSendData"]), "the last sendData is kept")
	require.JSONEq(t, string(before["leftLotteries"]), string(after["leftLotteries"]))
	require.Equal(t, sends, s.SendDataCalls(), "no second sendData within send_every")
}

// TestSwapKeepsTheFleetPushsLastSuccess: after a config applied in place,
// /receiptd/status still says when the head office last accepted a push
// (and the buffer goes on from its cursor on disk), while the head office
// now refuses: before, lastSuccess was null after the swap, as if the
// till had never pushed.
func TestSwapKeepsTheFleetPushsLastSuccess(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 63})
	rcv := fleettest.New(t, func(n int) int {
		if n == 0 {
			return http.StatusNoContent
		}
		return http.StatusServiceUnavailable
	})
	cfg := testConfig(t, s.URL())
	cfg.Fleet.RemoteWriteURL, cfg.Fleet.Interval = rcv.URL, config.Dur(5*time.Second)
	sup := runSupervisor(t, cfg, 10*time.Second)
	lastSuccess := func() string {
		resp, body := getBody(t, sup.URL()+"/receiptd/status")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var st struct {
			Fleet map[string]json.RawMessage `json:"fleet"`
		}
		require.NoError(t, json.Unmarshal(body, &st))
		return string(st.Fleet["lastSuccess"])
	}
	require.Eventually(t, func() bool { return lastSuccess() != "null" }, 30*time.Second, 50*time.Millisecond)
	before := lastSuccess()

	next := cfg
	next.Accept.QueuedAnswer = config.QueuedAnswerError
	require.NoError(t, sup.Apply(context.Background(), next))
	require.Equal(t, before, lastSuccess(), "the last success is kept across the swap")
}

// TestSwapAppliesTheLogLevel: log.level takes effect at the swap that
// applies it, on the logger every component already holds (and at once,
// from the config in effect, when the level is followed); a rollback
// leaves it. Before, a remote log.level was APPLIED and ignored until a
// restart, and not even then (the logger is built from the own file).
func TestSwapAppliesTheLogLevel(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 64})
	cfg := testConfig(t, s.URL())
	cfg.Log.Level = "warn"
	level := zap.NewAtomicLevelAt(zapcore.DebugLevel)
	core, logs := observer.New(level)
	sup, err := daemon.NewSupervisor(cfg, zap.New(core), "test", 3*time.Second)
	require.NoError(t, err)
	sup.FollowLogLevel(level)
	require.Equal(t, zapcore.WarnLevel, level.Level(), "the config in effect's level at once")
	serveSupervisor(t, sup)

	next := cfg
	next.Log.Level = "debug"
	require.NoError(t, sup.Apply(context.Background(), next))
	require.Equal(t, zapcore.DebugLevel, level.Level())
	resp, body := post(t, sup.URL(), testkit.Receipt("lvl"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	// The line is written after the answer when the sale was sent by its
	// own request (the answer goes first), so it may land a moment later.
	require.Eventually(t, func() bool {
		return logs.FilterLevelExact(zapcore.DebugLevel).FilterMessage("receipt accepted").Len() > 0
	}, 10*time.Second, 5*time.Millisecond, "the components log at debug once it is applied")

	bad := next
	bad.Log.Level = "error"
	bad.Backup.Dir = filepath.Join(t.TempDir(), "a-file", "snapshots") // never ready: rolled back
	require.NoError(t, os.WriteFile(filepath.Dir(bad.Backup.Dir), nil, 0o600))
	require.Error(t, sup.Apply(context.Background(), bad))
	require.Equal(t, zapcore.DebugLevel, level.Level(), "a config rolled back leaves the level")
}
