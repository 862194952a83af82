package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// receiptdBinary is the command under test, built once per test run.
func receiptdBinary(t *testing.T) string { return testkit.Binary(t) }

func TestMain(m *testing.M) { testkit.Main(m, removeReleases) }

// binCmd returns an exec.Cmd of the binary with a clean environment
// (no RECEIPTD_ variables from the developer's shell), in a process group
// of its own so that harness.AskToStop can stop it (SIGTERM; on Windows
// CTRL_BREAK_EVENT, which Go delivers as os.Interrupt as it does Ctrl-C).
func binCmd(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, receiptdBinary(t), args...)
	harness.PrepareStop(cmd)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RECEIPTD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// runRefused runs `receiptd run` with cfgText and returns its exit code and
// standard error; it must end within the 10 seconds docs/contract.md allows.
func runRefused(t *testing.T, cfgText string) (int, string) {
	t.Helper()
	cfg := writeFile(t, "config.toml", cfgText)
	return runRefusedArgs(t, "run", "-config", cfg)
}

// runRefusedArgs runs the binary with args, which must fail within the 10
// seconds docs/contract.md allows for a start-up refusal. The binary is built
// before the clock starts.
func runRefusedArgs(t *testing.T, args ...string) (int, string) {
	t.Helper()
	receiptdBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := binCmd(ctx, t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "run did not exit within 10s; stderr: %s", stderr.String())
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "run should refuse to start; stderr: %s", stderr.String())
	return ee.ExitCode(), stderr.String()
}

func TestRunRefusesNonLoopbackWithoutToken(t *testing.T) {
	testkit.Parallel(t)
	code, stderr := runRefused(t, "listen = \"0.0.0.0:0\"\ndata_dir = "+tomlString(t.TempDir())+"\n")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "token")
	require.Contains(t, stderr, "listen")
}

func TestRunRefusesLockedDatabase(t *testing.T) {
	testkit.Parallel(t)
	dir := t.TempDir()
	st, err := store.Open(layout.DB(dir), store.Options{})
	require.NoError(t, err)
	defer st.Close()
	code, stderr := runRefused(t, "listen = \"127.0.0.1:0\"\ndata_dir = "+tomlString(dir)+"\n")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "data_dir: the database "+layout.DB(dir)+
		" is locked: another receiptd is running on this data directory\n")
	// Issue 40: which command shows the other receiptd.
	if runtime.GOOS == "windows" {
		require.Contains(t, stderr, "Next step: see which: `sc query receiptd` (the service) or `tasklist /fi \"imagename eq receiptd.exe\"`")
	} else {
		require.Contains(t, stderr, "Next step: see which: `systemctl status receiptd` (the service) or `pgrep -a receiptd`")
	}
}

func tomlString(s string) string { return `'` + s + `'` }

// TestRunServesAndStopsOnSIGTERM starts the daemon, talks to it through
// the CLI with only the config file, and stops it the way systemd does.
func TestRunServesAndStopsOnSIGTERM(t *testing.T) {
	addr := testkit.ClosedAddr(t)
	cfg := writeFile(t, "config.toml", "listen = \""+addr+"\"\ndata_dir = "+tomlString(t.TempDir())+
		"\nshutdown_timeout = \"5s\"\n[upstream]\nbase_url = \"http://"+testkit.ClosedAddr(t)+"\"\n"+
		"lookup_base_url = \"http://"+testkit.ClosedAddr(t)+"\"\n[log]\nformat = \"json\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := binCmd(ctx, t, "run", "-config", cfg)
	stderr, err := run.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, run.Start())
	logs := waitForLine(t, stderr, "receiptd ready")
	require.Contains(t, logs, `"msg":"config loaded"`, "JSON when not on a terminal")

	resp, err := http.Post("http://"+addr+"/rest/receipt", "application/json", bytes.NewReader(sampleReceipt("000777")))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "the upstream is down: queued")

	out, err := binCmd(ctx, t, "entries", "-config", cfg).CombinedOutput()
	require.NoError(t, err, string(out))
	// Unsent: queued, or sending at the moment a retry against the closed
	// upstream is under way.
	require.Regexp(t, regexp.MustCompile(`Q000000000001\s+receipt\s+(queued|sending)`), string(out))

	require.NoError(t, harness.AskToStop(run.Process))
	rest, _ := io.ReadAll(stderr)
	require.NoError(t, run.Wait(), string(rest))
	require.Contains(t, string(rest), `"msg":"stopped"`)
}

// waitForLine reads r until a line contains want, and returns what it read.
func waitForLine(t *testing.T, r io.Reader, want string) string {
	t.Helper()
	var seen strings.Builder
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), want) {
			return seen.String()
		}
	}
	t.Fatalf("no line with %q; output:\n%s", want, seen.String())
	return ""
}

// TestDemo runs the demo, posts the sample receipt it prints, and stops it
// as Ctrl-C would: it must exit 0 and remove its data directory.
func TestDemo(t *testing.T) {
	testkit.Parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	demo := binCmd(ctx, t, "demo", "-listen", testkit.ClosedAddr(t), "-sim-listen", testkit.ClosedAddr(t))
	stdout, err := demo.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	demo.Stderr = &stderr
	require.NoError(t, demo.Start())
	printed := waitForLine(t, stdout, "/rest/receipt")
	// A receipt inline on Unix shells; from a file on Windows (cmd.exe
	// has no single quotes).
	m := regexp.MustCompile(`(?:-d '(\{.*\})'|--data-binary @(\S+)) (http://\S+)/rest/receipt`).FindStringSubmatch(printed)
	require.NotNil(t, m, printed)
	require.Contains(t, printed, m[3]+"/metrics")
	require.Contains(t, printed, "/sim/faults")
	sample := m[1]
	if m[2] != "" {
		b, err := os.ReadFile(m[2])
		require.NoError(t, err)
		sample = string(b)
	}

	resp, err := http.Post(m[3]+"/rest/receipt", "application/json", strings.NewReader(sample))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"status":"SUCCESS"`)

	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	require.NoError(t, harness.AskToStop(demo.Process))
	require.NoError(t, demo.Wait(), stderr.String())
	m = regexp.MustCompile(`"db": ("[^"]+")`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, stderr.String())
	var db string
	require.NoError(t, json.Unmarshal([]byte(m[1]), &db), m[1])
	require.NoDirExists(t, filepath.Dir(db))
}

// TestDemoOutage runs the demo's outage script: a receipt posted while the
// simulator is down is answered 202 and, once it is back, logged as sent.
// Its -config sets auth.token, which the script's own requests carry.
func TestDemoOutage(t *testing.T) {
	testkit.Parallel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A simulator port of its own: during the outage the simulator's port
	// is closed, and another demo started meanwhile on the default 7081
	// took it, so the simulator never came back (CI, 2026-11-27).
	cfg := writeFile(t, "demo.toml", "[auth]\ntoken = \"demo-outage-token-0123\"\n")
	demo := binCmd(ctx, t, "demo", "-config", cfg, "-listen", testkit.ClosedAddr(t), "-sim-listen", testkit.ClosedAddr(t),
		"-outage", "2s", "-outage-after", "300ms")
	stderr, err := demo.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, demo.Start())
	logs := waitForLine(t, stderr, "recovered: the receipt queued during the outage was sent")
	require.Regexp(t, `receipt posted while the tax service is down\s+\{"httpStatus": 202, "queueId": "Q000000000001"\}`, logs)

	drained := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stderr); close(drained) }()
	require.NoError(t, harness.AskToStop(demo.Process))
	<-drained // Wait closes the pipe: read it to the end first
	require.NoError(t, demo.Wait())
}
