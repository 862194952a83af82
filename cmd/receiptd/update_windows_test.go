package main

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/service"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
	"github.com/receiptd/receiptd/internal/update/updatetest"
)

// TestUpdateOnWindowsSwitchesAndRollsBack: a till running 1.0.0 takes
// 1.1.0 from a signed file while a POS posts receipts: 1.1.0 binds the
// same address once 1.0.0 has closed it (connections meanwhile are
// refused, and the POS's retries get through), serves on probation, is
// installed; every receipt acknowledged is stored once. A release that
// exits at start is rolled back by 1.1.0, which binds the address again.
// Then TerminateProcess of the entry point takes 1.1.0 down with it (its
// Job Object kills it; its standard input ending would stop it too, so
// TestChildDiesWithItsParent in package daemon is the Job Object's own
// test), and the next start runs 1.1.0 again as its child.
func TestUpdateOnWindowsSwitchesAndRollsBack(t *testing.T) {
	v100, v110, bad := buildReleases(t)
	s := updatetest.NewSigner(t)
	cfg := updateTill(t, s, 4*time.Second)
	cfg.Control.RollbackAfter = config.Dur(30 * time.Second) // starts are slow under Wine
	p := startUpdating(t, v100, cfg, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg = p.Config()
	v, _ := served(t, p.URL())
	require.Equal(t, "1.0.0", v)

	stop := make(chan struct{})
	var unanswered []string
	acked, failures, posDone := pos(p.URL(), stop, &unanswered, 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	code, out := apply(t, v100, p.ConfigPath(), signed(t, s, v110, "1.1.0"))
	require.Equal(t, exitOK, code, "%s\nlog: %s", out, p.LogTail(4000))
	require.Contains(t, out, "on probation")
	v, onProbation := served(t, p.URL())
	require.Equal(t, "1.1.0", v, "the new version answers on the same address")
	require.True(t, onProbation)
	require.Eventually(t, func() bool { return readState(t, cfg.DataDir).Phase == release.Installed },
		30*time.Second, 100*time.Millisecond, "log: %s", p.LogTail(4000))
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-posDone
	require.Empty(t, *failures, "every POS request got through, retried over the gap")
	t.Logf("POS requests refused or reset during the switch, then retried: %d %v", len(unanswered), unanswered)
	require.Greater(t, len(*acked), 5)
	entries, err := testkit.ListEntries[testkit.Entry](context.Background(), http.DefaultClient, p.URL())
	require.NoError(t, err)
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.QueueID]++
	}
	for _, id := range *acked {
		require.Equal(t, 1, seen[id], "receipt %s acknowledged, stored once", id)
	}

	code, out = apply(t, v100, p.ConfigPath(), signed(t, s, bad, "1.2.0"))
	require.Equal(t, exitFailure, code, "%s\nlog: %s", out, p.LogTail(4000))
	require.Contains(t, out, "rolled back: it stopped at start")
	v, _ = served(t, p.URL())
	require.Equal(t, "1.1.0", v, "1.1.0 bound the address again")
	st := readState(t, cfg.DataDir)
	require.Equal(t, release.RolledBack, st.Phase)
	require.Equal(t, "1.1.0", st.Running.Version)

	require.NoError(t, p.Kill())
	require.Eventually(t, func() bool { return refused(p.Config().Listen) }, 10*time.Second, 50*time.Millisecond,
		"1.1.0 died with the entry point (its Job Object closed)")
	again, err := harness.StartFile(context.Background(), v100, p.ConfigPath())
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		require.NoError(t, again.Stop(ctx), "log: %s", again.LogTail(4000))
	})
	require.NoError(t, again.WaitReady(ctx), "log: %s", again.LogTail(4000))
	v, _ = served(t, again.URL())
	require.Equal(t, "1.1.0", v, "a start runs the installed version as its child")
}

// refused reports whether nothing accepts on addr.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	_ = c.Close()
	return false
}

// TestServiceUpdateUnderTheServiceManager: receiptd 1.0.0 installed as
// the service "receiptd" under the service control manager takes 1.1.0
// with `receiptd.exe update apply`: 1.1.0 answers on the same address as
// the service's child, and the service's registered executable is still
// 1.0.0's. A release that exits at start is rolled back (1.1.0 answers),
// and a service stop stops 1.1.0 too, cleanly. 1.1.0's log lines reach
// the service's default log file through the service (a service's child
// has no output of its own).
func TestServiceUpdateUnderTheServiceManager(t *testing.T) {
	if os.Getenv(serviceTestEnv) != "1" {
		t.Skipf("installs the system service receiptd; set %s=1 to run it", serviceTestEnv)
	}
	v100, v110, bad := buildReleases(t)
	s := updatetest.NewSigner(t)
	dir := t.TempDir()
	cfg := updateTill(t, s, 3*time.Second)
	cfg.Control.RollbackAfter = config.Dur(30 * time.Second)
	cfg.ShutdownTimeout = config.Dur(5 * time.Second)
	addr, err := harness.FreeAddr()
	require.NoError(t, err)
	cfg.Listen = addr
	cfg.Log.File = "" // the service's default, which the service writes alone
	logFile := service.DefaultLogFile()
	if err := os.Remove(logFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
	}
	cfgPath := filepath.Join(dir, "receiptd.toml")
	require.NoError(t, harness.WriteConfig(cfgPath, cfg))
	run := func(args ...string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, v100, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		require.NoError(t, err, "receiptd %s: %s", strings.Join(args, " "), out)
		return 0, string(out)
	}
	logTail := func() string {
		b, _ := os.ReadFile(logFile)
		if len(b) > 6000 {
			b = b[len(b)-6000:]
		}
		return string(b)
	}
	code, out := run("install", "-config", cfgPath)
	require.Equal(t, exitOK, code, out)
	t.Cleanup(func() {
		_ = exec.Command(v100, "uninstall").Run()
		if t.Failed() {
			t.Logf("service log:\n%s", logTail())
		}
	})
	registered := servicePath(t)
	require.True(t, strings.Contains(strings.ToLower(registered), strings.ToLower(filepath.Base(v100))), registered)

	code, out = run("start")
	require.Equal(t, exitOK, code, out)
	base := "http://" + addr
	waitHealthy(t, base)
	v, _ := served(t, base)
	require.Equal(t, "1.0.0", v)

	code, out = run("update", "apply", "-config", cfgPath, signed(t, s, v110, "1.1.0"))
	require.Equal(t, exitOK, code, out)
	v, _ = served(t, base)
	require.Equal(t, "1.1.0", v, "the new version answers on the service's address")
	require.Eventually(t, func() bool { return readState(t, cfg.DataDir).Phase == release.Installed },
		30*time.Second, 100*time.Millisecond)
	require.Equal(t, registered, servicePath(t), "the service's registered executable is unchanged")
	require.Equal(t, svc.Running, serviceState(t))

	code, out = run("update", "apply", "-config", cfgPath, signed(t, s, bad, "1.2.0"))
	require.Equal(t, exitFailure, code, out)
	require.Contains(t, out, "rolled back: it stopped at start")
	v, _ = served(t, base)
	require.Equal(t, "1.1.0", v, "the installed version answers again")

	began := time.Now()
	code, out = run("stop")
	took := time.Since(began)
	require.Equal(t, exitOK, code, out)
	t.Logf("service stop took %s", took)
	require.Less(t, took, 10*time.Second, "1.1.0 stopped when asked (its standard input closed), not killed after shutdown_timeout and a margin")
	require.Equal(t, svc.Stopped, serviceState(t))
	require.True(t, refused(addr), "1.1.0 stopped with the service")
	require.Equal(t, registered, servicePath(t))
	log, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Contains(t, string(log), `"msg":"the new version did not pass; rolling back","release":"1.2.0"`,
		"1.1.0's own line, passed on by the service")
	require.Contains(t, string(log), `"msg":"stopped"`)
}

// servicePath is the service's registered command line, read with
// QueryServiceConfigW alone (mgr.Service.Config also asks for the
// delayed start, which Wine does not keep).
func servicePath(t *testing.T) string {
	t.Helper()
	m, err := mgr.Connect()
	require.NoError(t, err)
	defer func() { _ = m.Disconnect() }()
	s, err := m.OpenService(service.Name)
	require.NoError(t, err)
	defer s.Close()
	var need uint32
	_ = windows.QueryServiceConfig(s.Handle, nil, 0, &need)
	require.NotZero(t, need)
	buf := make([]byte, need)
	c := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	require.NoError(t, windows.QueryServiceConfig(s.Handle, c, need, &need))
	return windows.UTF16PtrToString(c.BinaryPathName)
}
