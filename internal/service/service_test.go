package service

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.DataDir = "/srv/receipt data/100%"
	cfg.Log.File = "/var/log/receiptd/receiptd.log"
	cfg.ShutdownTimeout = config.Dur(15 * time.Second)
	unit, err := systemdUnit(cfg)
	require.NoError(t, err)
	for _, line := range []string{
		`ReadWritePaths="/srv/receipt data/100%%" /var/log/receiptd`,
		"User={{UserName}}", "Restart={{Restart}}", "TimeoutStopSec=35",
		"ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
		"ExecStart={{Path | cmdEscape}}{{range Arguments}} {{. | cmd}}{{end}}",
	} {
		require.Contains(t, unit, "\n"+line+"\n")
	}
	require.NotContains(t, unit, "@READWRITE@")
	require.NotContains(t, unit, "@STOPSEC@")
	known := map[string]bool{"{{Description}}": true, "{{UserName}}": true, "{{Path | cmdEscape}}": true,
		"{{range Arguments}}": true, "{{. | cmd}}": true, "{{end}}": true, "{{Restart}}": true}
	for _, action := range regexp.MustCompile(`\{\{[^}]*\}\}`).FindAllString(unit, -1) {
		require.True(t, known[action], "kardianos/service v1.3.0 fills no %s", action)
	}

	cfg.DataDir = "/srv/{{Name}}"
	_, err = systemdUnit(cfg)
	require.Error(t, err)
}

// TestSystemdUnitHasThePackagedHardening: the unit "receiptd install"
// writes carries every setting of the packaged unit, except those it fills
// from the configuration or the service definition.
func TestSystemdUnitHasThePackagedHardening(t *testing.T) {
	t.Parallel()
	packaged, err := os.ReadFile("../../packaging/systemd/receiptd.service")
	require.NoError(t, err)
	unit, err := systemdUnit(config.Default())
	require.NoError(t, err)
	installed := map[string]bool{}
	for _, line := range strings.Split(unit, "\n") {
		installed[line] = true
	}
	differs := map[string]bool{"Description": true, "Documentation": true, "User": true, "Group": true,
		"ExecStart": true, "Restart": true, "TimeoutStopSec": true, "ReadWritePaths": true}
	n := 0
	for _, line := range strings.Split(string(packaged), "\n") {
		key, _, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") || differs[key] {
			continue
		}
		n++
		require.True(t, installed[line], "the installed unit lacks the packaged unit's %q", line)
	}
	require.Greater(t, n, 30, "settings compared")
}

func TestServiceConfig(t *testing.T) {
	t.Parallel()
	sc, err := serviceConfig("/etc/receiptd/config.toml", config.Default())
	require.NoError(t, err)
	require.Equal(t, "receiptd", sc.Name)
	require.Equal(t, []string{"run", "-config", "/etc/receiptd/config.toml"}, sc.Arguments)
}

// TestProgramStartStop drives the service program as a service manager
// would: Start returns once the daemon listens, Stop waits for it.
func TestProgramStartStop(t *testing.T) {
	cfg := config.Default()
	cfg.Listen = testkit.ClosedAddr(t)
	cfg.DataDir = t.TempDir()
	cfg.Upstream.BaseURL = "http://" + testkit.ClosedAddr(t)
	cfg.Upstream.LookupBaseURL = cfg.Upstream.BaseURL
	p := &program{cfg: cfg, log: zap.NewNop(), start: startDaemon}
	require.NoError(t, p.Stop(nil), "Stop before Start does nothing")
	require.NoError(t, p.Start(nil))

	resp, err := http.Get("http://" + cfg.Listen + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, p.Stop(nil))
	select {
	case <-p.finished():
	default:
		t.Fatal("Stop returned before the daemon ended")
	}
	_, err = http.Get("http://" + cfg.Listen + "/healthz")
	require.Error(t, err, "listener closed")

	// A second program on the same data directory is refused at Start.
	p2 := &program{cfg: cfg, log: zap.NewNop(), start: startDaemon}
	blocker := &program{cfg: cfg, log: zap.NewNop(), start: startDaemon}
	require.NoError(t, blocker.Start(nil))
	defer func() { require.NoError(t, blocker.Stop(nil)) }()
	cfg2 := cfg
	cfg2.Listen = testkit.ClosedAddr(t)
	p2.cfg = cfg2
	err = p2.Start(nil)
	require.ErrorContains(t, err, filepath.Join(cfg.DataDir, "receiptd.db"))
}

func TestProgramStopTimesOut(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.ShutdownTimeout = config.Dur(time.Millisecond)
	p := &program{cfg: cfg, log: zap.NewNop(), start: startDaemon, margin: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	release := make(chan struct{})
	go p.serveLoop(ctx, func(ctx context.Context) error {
		<-ctx.Done()
		<-release // a shutdown that hangs
		return nil
	})
	err := p.Stop(nil)
	require.True(t, errors.Is(err, errStopTimeout), "%v", err)
	close(release)
	<-p.finished()
}

// startDaemon is the StartFunc of cmd/receiptd without its refusals'
// classification.
func startDaemon(cfg config.Config, log *zap.Logger) (Daemon, error) {
	d, err := daemon.New(cfg, log, "test")
	if err != nil {
		return nil, err
	}
	return d, nil
}
