//go:build linux

package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
	"github.com/receiptd/receiptd/internal/update"
	"github.com/receiptd/receiptd/internal/update/updatetest"
)

// TestUpdateInstallsThenRollsBackABadRelease: a till running 1.0.0 takes
// 1.1.0 from a signed file while a POS posts receipts on fresh
// connections: none is refused, 1.1.0 serves on probation and then is
// installed, and every receipt acknowledged is in the queue once. Then a
// release that exits at start is rolled back: 1.1.0 serves again, and the
// same file is refused for good.
func TestUpdateInstallsThenRollsBackABadRelease(t *testing.T) {
	testkit.Parallel(t)
	v100, v110, bad := buildReleases(t)
	s := updatetest.NewSigner(t)
	cfg := updateTill(t, s, 4*time.Second)
	p := startUpdating(t, v100, cfg, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg = p.Config()
	v, _ := served(t, p.URL())
	require.Equal(t, "1.0.0", v)

	stop := make(chan struct{})
	var unanswered []string
	acked, failures, posDone := pos(p.URL(), stop, &unanswered, 0)
	time.Sleep(300 * time.Millisecond)
	code, out := apply(t, v100, p.ConfigPath(), signed(t, s, v110, "1.1.0"))
	require.Equal(t, exitOK, code, "%s\nlog: %s", out, p.LogTail(4000))
	require.Contains(t, out, "on probation")
	v, onProbation := served(t, p.URL())
	require.Equal(t, "1.1.0", v)
	require.True(t, onProbation)
	require.Eventually(t, func() bool { return readState(t, cfg.DataDir).Phase == release.Installed }, 15*time.Second, 50*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-posDone
	require.Empty(t, *failures, "no POS request failed during the switch")
	t.Logf("POS requests retried after a connection closed unanswered: %d %v", len(unanswered), unanswered)
	require.Greater(t, len(*acked), 10)
	st := readState(t, cfg.DataDir)
	require.Equal(t, "1.1.0", st.Running.Version)
	require.Equal(t, &release.Version{}, st.Previous, "the entry point's own code ran before")
	v, onProbation = served(t, p.URL())
	require.Equal(t, "1.1.0", v)
	require.False(t, onProbation)
	status, err := exec.Command(v100, "update", "status", "-config", p.ConfigPath()).CombinedOutput()
	require.NoError(t, err, "%s", status)
	require.Contains(t, string(status), "state:       installed\n")
	require.Contains(t, string(status), "running:     1.1.0 (")
	require.Contains(t, string(status), "previous:    the entry point's own (1.0.0)\n")
	require.Contains(t, string(status), "daemon:      1.1.0 answers\n")

	entries, err := testkit.ListEntries[testkit.Entry](context.Background(), http.DefaultClient, p.URL())
	require.NoError(t, err)
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.QueueID]++
	}
	for _, id := range *acked {
		require.Equal(t, 1, seen[id], "receipt %s acknowledged, stored once", id)
	}
	require.Len(t, entries, len(*acked), "nothing stored that was not acknowledged")

	badFile := signed(t, s, bad, "1.2.0")
	code, out = apply(t, v100, p.ConfigPath(), badFile)
	require.Equal(t, exitFailure, code, out)
	require.Contains(t, out, "rolled back: it stopped at start")
	v, _ = served(t, p.URL())
	require.Equal(t, "1.1.0", v, "the version installed before serves again")
	st = readState(t, cfg.DataDir)
	require.Equal(t, release.RolledBack, st.Phase)
	require.Equal(t, "1.1.0", st.Running.Version)
	require.Len(t, st.RolledBack, 1)
	before := versionsIn(t, cfg.DataDir)

	code, out = apply(t, v100, p.ConfigPath(), badFile)
	require.Equal(t, exitUsage, code, out)
	require.Contains(t, out, "was rolled back on this till before")
	require.Equal(t, before, versionsIn(t, cfg.DataDir))
	v, _ = served(t, p.URL())
	require.Equal(t, "1.1.0", v)

	// A restart runs the installed version, as the entry point's child;
	// kill -9 of the entry point takes it down too (the next start
	// finds the port and the database free).
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	require.NoError(t, p.Stop(stopCtx), "the parent exits with the child's code 0")
	p = startFileKilled(t, v100, p.ConfigPath())
	require.NoError(t, p.WaitReady(ctx), "log: %s", p.LogTail(4000))
	v, _ = served(t, p.URL())
	require.Equal(t, "1.1.0", v, "a start runs the installed version")
	require.NoError(t, p.Kill())
	p = startFileKilled(t, v100, p.ConfigPath())
	require.NoError(t, p.WaitReady(ctx), "log: %s", p.LogTail(4000))
	v, _ = served(t, p.URL())
	require.Equal(t, "1.1.0", v)
	require.NoError(t, p.Stop(stopCtx), "log: %s", p.LogTail(4000))
}

// startFileKilled starts the till of the config at path, and kills it at
// the test's end if it still runs (a failed check): a daemon left running
// outlives the test run.
func startFileKilled(t *testing.T, bin, path string) *harness.Process {
	t.Helper()
	p, err := harness.StartFile(context.Background(), bin, path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

func versionsIn(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(layout.Versions(dataDir))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestKillDuringProbationRollsBack: kill -9 of the till's process while
// the new version is on probation takes the new version down with it
// (Pdeathsig: the next start finds the database and the port free), and
// the next start runs the previous version, recording the rollback.
func TestKillDuringProbationRollsBack(t *testing.T) {
	testkit.Parallel(t)
	v100, v110, _ := buildReleases(t)
	s := updatetest.NewSigner(t)
	cfg := updateTill(t, s, time.Hour)
	p := startKilled(t, v100, cfg, 20*time.Second)
	cfg = p.Config()

	code, out := apply(t, v100, p.ConfigPath(), signed(t, s, v110, "1.1.0"))
	require.Equal(t, exitOK, code, out)
	require.Equal(t, release.Probation, readState(t, cfg.DataDir).Phase)
	require.NoError(t, p.Kill())

	again, err := harness.StartFile(context.Background(), v100, p.ConfigPath())
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, again.Stop(ctx))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, again.WaitReady(ctx), "log: %s", again.LogTail(4000))
	v, onProbation := served(t, again.URL())
	require.Equal(t, "1.0.0", v)
	require.False(t, onProbation)
	st := readState(t, cfg.DataDir)
	require.Equal(t, release.RolledBack, st.Phase)
	require.Contains(t, st.Message, "receiptd stopped while 1.1.0 was probation")
	require.Len(t, st.RolledBack, 1)
	require.Nil(t, st.Running)
}

// TestApplyWithNoDaemonSwitchesAtTheNextStart: with no receiptd
// running, update apply keeps the release and says the next start
// switches; the next start of 1.0.0 puts 1.1.0 on probation, then
// installs it.
func TestApplyWithNoDaemonSwitchesAtTheNextStart(t *testing.T) {
	testkit.Parallel(t)
	v100, v110, _ := buildReleases(t)
	s := updatetest.NewSigner(t)
	cfg := updateTill(t, s, time.Second)
	addr, err := harness.FreeAddr()
	require.NoError(t, err)
	cfg.Listen = addr
	cfgPath := filepath.Join(t.TempDir(), "receiptd.toml")
	require.NoError(t, harness.WriteConfig(cfgPath, cfg))

	code, out := apply(t, v100, cfgPath, signed(t, s, v110, "1.1.0"))
	require.Equal(t, exitOK, code, out)
	require.Contains(t, out, "the next `receiptd run` switches to it")
	require.Equal(t, release.Staged, readState(t, cfg.DataDir).Phase)

	p, err := harness.StartFile(context.Background(), v100, cfgPath)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, p.Stop(ctx))
	})
	require.Eventually(t, func() bool { return readState(t, cfg.DataDir).Phase == release.Installed },
		20*time.Second, 50*time.Millisecond, "log: %s", p.LogTail(4000))
	v, _ := served(t, p.URL())
	require.Equal(t, "1.1.0", v)
}

// TestUpdateApplyRefusals: each refusal of update.Policy, through the
// command an operator types, exits 2 with the reason, leaves nothing in
// versions/ and leaves the running daemon as it was.
func TestUpdateApplyRefusals(t *testing.T) {
	testkit.Parallel(t)
	v100, v110, _ := buildReleases(t)
	s, stranger := updatetest.NewSigner(t), updatetest.NewSigner(t)
	cfg := updateTill(t, s, time.Hour)
	p := startUpdating(t, v100, cfg, 20*time.Second)
	cfg = p.Config()

	tampered := signed(t, s, v110, "1.1.0")
	data, err := os.ReadFile(tampered)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tampered, append(data, 0), 0o755))
	otherPlatform := filepath.Join(t.TempDir(), "receiptd")
	data, err = os.ReadFile(v110)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(otherPlatform, data, 0o755))
	s.SignFile(t, otherPlatform, update.Comment("1.1.0", "windows/amd64"))

	for _, c := range []struct {
		name, file, want string
	}{
		{"untrusted key", signed(t, stranger, v110, "1.1.0"), "which this till does not trust"},
		{"not newer", signed(t, s, v110, "1.0.0"), "is the version running"},
		{"older", signed(t, s, v110, "0.9.0"), "older than the running 1.0.0"},
		{"tampered", tampered, "the signature does not match the file"},
		{"another platform", otherPlatform, "another version or platform"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := apply(t, v100, p.ConfigPath(), c.file)
			require.Equal(t, exitUsage, code, out)
			require.Contains(t, out, c.want)
			entries, _ := os.ReadDir(layout.Versions(cfg.DataDir))
			require.Empty(t, entries)
			require.Equal(t, release.Refused, readState(t, cfg.DataDir).Phase)
		})
	}
	v, _ := served(t, p.URL())
	require.Equal(t, "1.0.0", v)
	select {
	case <-p.Done():
		t.Fatal("the daemon ended")
	default:
	}

	off := cfg
	off.Update.TrustedKeys = []string{}
	offPath := filepath.Join(t.TempDir(), "off.toml")
	require.NoError(t, harness.WriteConfig(offPath, off))
	code, out := apply(t, v100, offPath, signed(t, s, v110, "1.1.0"))
	require.Equal(t, exitUsage, code, out)
	require.Contains(t, out, "updates are off: update.trusted_keys is empty")
}
