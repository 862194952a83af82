package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/demo"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// runCLI runs the command line in-process and returns its exit code and
// output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runMain(context.Background(), args, &cmdEnv{stdout: &out, stderr: &errOut})
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestExitCodes(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	badConfig := writeFile(t, "bad.toml", "listen = \"127.0.0.1:7080\"\nlisten_typo = 1\n[sync]\nconcurrency = -3\n")
	badValue := writeFile(t, "value.toml", "[sync]\nconcurrency = -3\non_ambiguous = \"maybe\"\n")
	noDaemon := testkit.ClosedAddr(t)
	goodFragment := "[sync]\non_ambiguous = \"hold\"\n"
	goodRemote := writeFile(t, "good-remote.toml", goodFragment)
	badRemote := writeFile(t, "bad-remote.toml", "[accept]\n[auth]\ntoken = \"0123456789abcdef-remote\"\n")
	managedData := t.TempDir()
	managed := writeFile(t, "managed.toml", fmt.Sprintf("data_dir = %q\n[control]\nopamp_url = \"wss://hq.example/v1/opamp\"\n", managedData))
	require.NoError(t, os.MkdirAll(layout.Control(managedData), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(layout.Control(managedData), layout.ControlGoodFile), []byte(goodFragment), 0o600))
	tests := []struct {
		name     string
		args     []string
		code     int
		inStdout []string
		inStderr []string
	}{
		{"no command", nil, exitUsage, nil, []string{"usage: receiptd"}},
		{"help", []string{"-h"}, exitOK, nil, []string{"commands:", "config check", "export"}},
		{"unknown command", []string{"frobnicate"}, exitUsage, nil, []string{`unknown command "frobnicate"`}},
		{"bad flag", []string{"entries", "-bogus"}, exitUsage, nil, []string{"-bogus", "usage: receiptd entries"}},
		{"extra argument", []string{"version", "extra"}, exitUsage, nil, []string{"unexpected arguments: extra"}},
		{"version", []string{"version"}, exitOK, []string{"receiptd dev"}, nil},
		{"config check example", []string{"config", "check", "-config", "../../config.example.toml"}, exitOK,
			[]string{"ok: ../../config.example.toml"}, nil},
		{"config check unknown key", []string{"config", "check", "-config", badConfig}, exitUsage, nil,
			[]string{"line 2: listen_typo: unknown key"}},
		{"config check bad values", []string{"config", "check", "-config", badValue}, exitUsage, nil,
			[]string{"2 problems:\n  line 2: sync.concurrency: ", "\n  line 3: sync.on_ambiguous: "}},
		{"config check a good remote fragment", []string{"config", "check", "-config", "../../config.example.toml", "-remote", goodRemote}, exitOK,
			[]string{"ok: ../../config.example.toml\n", "\nremote config " + config.FragmentHash([]byte(goodFragment)) + " sets: sync.on_ambiguous\n"}, nil},
		{"config check a bad remote fragment", []string{"config", "check", "-config", "../../config.example.toml", "-remote", badRemote}, exitUsage, nil,
			[]string{"the remote config: 1 problem:\n  line 3: auth.token: can never be set remotely"}},
		{"config check the kept remote fragment", []string{"config", "check", "-config", managed}, exitOK,
			[]string{"remote config " + config.FragmentHash([]byte(goodFragment)) + " sets: sync.on_ambiguous\n"}, nil},
		{"config check missing file", []string{"config", "check", "-config", filepath.Join(t.TempDir(), "none.toml")},
			exitUsage, nil, []string{"does not exist"}},
		{"run with a bad config", []string{"run", "-config", badValue}, exitUsage, nil, []string{"sync.concurrency"}},
		{"run with a missing config", []string{"run", "-config", filepath.Join(t.TempDir(), "x.toml")}, exitUsage, nil,
			[]string{"does not exist"}},
		{"entries without a daemon", []string{"entries", "-addr", noDaemon, "-token", "t"}, exitFailure, nil,
			[]string{"is receiptd running?", noDaemon}},
		{"retry without a daemon", []string{"retry", "-addr", noDaemon, "-token", "t", "Q000000000001"}, exitFailure, nil,
			[]string{"is receiptd running?"}},
		{"backup without a daemon", []string{"backup", "-addr", noDaemon, "-token", "t", filepath.Join(t.TempDir(), "b.db")},
			exitFailure, nil, []string{"is receiptd running?"}},
		{"entries bad state", []string{"entries", "-state", "lost"}, exitUsage, nil, []string{`-state "lost"`}},
		{"entries with a bad config", []string{"entries", "-config", badConfig}, exitUsage, nil, []string{"listen_typo"}},
		{"retry without id", []string{"retry"}, exitUsage, nil, []string{"want one queueId"}},
		{"retry bad id", []string{"retry", "42"}, exitUsage, nil, []string{"not a queueId"}},
		{"backup without file", []string{"backup"}, exitUsage, nil, []string{"want the file"}},
		{"export without range", []string{"export"}, exitUsage, nil, []string{"-from and -to are required"}},
		{"export bad date", []string{"export", "-from", "yesterday", "-to", "2026-01-01"}, exitUsage, nil,
			[]string{`-from "yesterday"`}},
		{"export reversed", []string{"export", "-from", "2026-02-01", "-to", "2026-01-01"}, exitUsage, nil,
			[]string{"is after"}},
		{"export bad format", []string{"export", "-from", "2026-01-01", "-to", "2026-01-02", "-format", "xml"},
			exitUsage, nil, []string{`-format "xml"`}},
		{"demo non-loopback", []string{"demo", "-listen", "0.0.0.0:7080"}, exitUsage, nil, []string{"loopback"}},
		{"sim bad rate", []string{"sim", "-error-rate", "2"}, exitUsage, nil, []string{"rates"}},
		{"sim negative reject", []string{"sim", "-reject", "-1"}, exitUsage, nil, []string{"rejectNext must not be negative"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, s := range tc.inStdout {
				require.Contains(t, stdout, s)
			}
			for _, s := range tc.inStderr {
				require.Contains(t, stderr, s)
			}
		})
	}
}

func TestEveryCommandPrintsItsFlags(t *testing.T) {
	t.Parallel()
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	require.Subset(t, names, []string{"run", "demo", "sim", "install", "uninstall", "start", "stop", "restart",
		"status", "entries", "retry", "export", "backup", "config check", "version"})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append(strings.Fields(name), "-h")...)
			require.Equal(t, exitOK, code, stderr)
			require.Contains(t, stderr, "usage: receiptd "+name)
		})
	}
}

// TestConfigCheckReportsEveryProblem: config check and run print the same
// report of a bad file (every problem, each with its line, in one format)
// and exit 2.
func TestConfigCheckReportsEveryProblem(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	path := writeFile(t, "c.toml", "[accept]\nwait = \"5 s\"\ntimezone = \"Mars/Olympus\"\n"+
		"[sync]\nconcurency = 3\nconcurrency = \"2\"\n[log]\nmax_files = -1\n")
	report := path + `: 5 problems:
  line 2: accept.wait: must be a duration like "5s" or "24h", not "5 s"
  line 3: accept.timezone: unknown time zone "Mars/Olympus"; use an IANA name like "Asia/Ulaanbaatar", or "Local"
  line 5: sync.concurency: unknown key; did you mean sync.concurrency?
  line 6: sync.concurrency: must be a whole number, not the text "2" (remove the quotes)
  line 8: log.max_files: must be at least 1, not -1
`
	for _, cmd := range [][]string{{"config", "check"}, {"run"}, {"entries"}} {
		name := strings.Join(cmd, " ")
		code, stdout, stderr := runCLI(t, append(cmd, "-config", path)...)
		require.Equal(t, exitUsage, code, name)
		require.Empty(t, stdout, name)
		require.Equal(t, "receiptd "+name+": "+report, stderr, name)
	}

	syntax := writeFile(t, "s.toml", "listen = \"127.0.0.1:7080\"\n[sync\nconcurrency = 2\n")
	code, _, stderr := runCLI(t, "config", "check", "-config", syntax)
	require.Equal(t, exitUsage, code)
	require.Equal(t, "receiptd config check: "+syntax+": 1 problem:\n"+
		"  line 2: syntax error: expected '.' or ']' to end table name, but got '\\n' instead\n", stderr)
}

// TestUnreadableConfigGetsAHint: a config file the user may not read gets
// a hint instead of a bare "permission denied". Root reads any file, so as
// root (how CI runs) the real binary is run as an unprivileged user.
func TestUnreadableConfigGetsAHint(t *testing.T) {
	testkit.Parallel(t)
	if runtime.GOOS == "windows" {
		t.Skip("file modes do not make a file unreadable on Windows")
	}
	dir, err := os.MkdirTemp("", "receiptd-unreadable-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755)) // others may reach the file, not read it
	path := filepath.Join(dir, "c.toml")
	require.NoError(t, os.WriteFile(path, nil, 0))
	var code int
	var stderr string
	if os.Geteuid() == 0 {
		code, stderr = runUnprivileged(t, "entries", "-config", path)
	} else {
		code, _, stderr = runCLI(t, "entries", "-config", path)
	}
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "permission denied")
	require.Contains(t, stderr, "pass -addr and -token")
}

// TestPortTextsAgree: 7080 is PosAPI's usual port, which receiptd takes;
// the simulator stands where the default upstream.base_url expects PosAPI.
func TestPortTextsAgree(t *testing.T) {
	t.Parallel()
	require.Equal(t, "127.0.0.1:7080", config.Default().Listen)
	require.Equal(t, "http://127.0.0.1:7081", config.Default().Upstream.BaseURL)
	code, _, stderr := runCLI(t, "sim", "-h")
	require.Equal(t, exitOK, code)
	require.Contains(t, stderr, "\taddress to listen on: 7081 is where receiptd's default upstream.base_url "+
		"expects PosAPI, since receiptd takes PosAPI's usual port 7080 (default \"127.0.0.1:7081\")\n")
	example, err := os.ReadFile("../../config.example.toml")
	require.NoError(t, err)
	require.Contains(t, string(example), "listens on 7080 by default, which receiptd now takes: move PosAPI to 7081")
}

// TestSimHelpDocumentsRejection: `receiptd sim -h` says how to make the
// simulator refuse receipts, at start and later through its /sim/ API.
func TestSimHelpDocumentsRejection(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, "sim", "-h")
	require.Equal(t, exitOK, code)
	require.Contains(t, stderr, "[-reject N [-reject-message M]]")
	require.Contains(t, stderr, "refuse the next N receipts as the tax service refuses an invalid one (HTTP 400, status ERROR); "+
		`later: PUT /sim/faults {"rejectNext":N}`)
	require.Contains(t, stderr, `the message of those refusals (default "simulated rejection")`)
}

// TestServiceCommandsHere runs the real commands on this machine when it
// does not run systemd (as in CI's containers): install refuses, the
// others say "not installed". Nothing is written.
func TestServiceCommandsHere(t *testing.T) {
	if runtime.GOOS != "linux" || systemdRuns() {
		t.Skip("needs Linux without systemd: on a systemd machine these commands would change the system")
	}
	if _, err := os.Lstat("/etc/init.d/receiptd"); err == nil {
		t.Skip("/etc/init.d/receiptd exists; uninstall would remove it")
	}
	why := "this system does not run systemd (there is no /run/systemd/system)"
	code, stdout, stderr := runCLI(t, "install", "-config", "/nonexistent/receiptd.toml")
	require.Equal(t, exitFailure, code)
	require.Empty(t, stdout)
	require.Equal(t, "receiptd install: "+why+", and receiptd installs itself only as a systemd unit "+
		"(user receiptd, hardened). Run it under this system's own supervisor as an unprivileged user instead: "+
		"receiptd run -config /nonexistent/receiptd.toml\n", stderr)
	code, stdout, stderr = runCLI(t, "status", "-addr", testkit.ClosedAddr(t), "-token", "0123456789abcdef0123")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stdout, "daemon: is receiptd running? cannot reach it at")
	require.Contains(t, stdout, "system service: service receiptd is not installed: "+why+"\n")
	require.Contains(t, stderr, "no receiptd answers, and the system service is not running")
	for _, action := range []string{"start", "stop", "restart"} {
		code, stdout, stderr = runCLI(t, action)
		require.Equal(t, exitFailure, code, action)
		require.Empty(t, stdout, action)
		require.Equal(t, "receiptd "+action+": service receiptd is not installed: "+why+"\n", stderr, action)
	}
	code, stdout, stderr = runCLI(t, "uninstall")
	require.Equal(t, exitOK, code)
	require.Equal(t, "service receiptd is not installed: "+why+"; nothing to remove\n", stdout)
	require.Empty(t, stderr)
}

// systemdRuns: /run/systemd/system exists when systemd is the running
// init system (the test sd_booted(3) makes).
func systemdRuns() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// TestRunWithAMissingConfigFile: with -config, a missing file is an error
// (so install leaves -config out while the file does not exist yet).
func TestRunWithAMissingConfigFile(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "config.toml")
	code, _, stderr := runCLI(t, "run", "-config", missing)
	require.Equal(t, exitUsage, code)
	require.Equal(t, "receiptd run: config file "+missing+" does not exist\nusage: receiptd run [-config FILE] [-init]\n", stderr)
}

func TestSampleReceiptIsValid(t *testing.T) {
	t.Parallel()
	body := sampleReceipt("000042")
	_, err := receipt.ParseCreate(body)
	require.NoError(t, err)

	srv := httptest.NewServer(sim.New(sim.Options{Seed: 1}).Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/rest/receipt", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var answer map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	require.Equal(t, http.StatusOK, resp.StatusCode, answer)
	require.Equal(t, "SUCCESS", answer["status"])
}

// sampleReceipt is the demo's sample receipt with another bill id suffix.
func sampleReceipt(billIDSuffix string) []byte { return demo.SampleReceipt(billIDSuffix) }
