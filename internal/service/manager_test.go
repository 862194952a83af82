package service

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeSystemctl is a systemctl and a journalctl as shell scripts in a
// directory: "show" prints the file show, start and stop record the call
// and move to the state in after-start / after-stop, start fails with the
// text of start-fails when that file exists; journalctl prints journal and
// records its arguments. systemdManager runs them as it runs the real ones.
type fakeSystemctl struct {
	dir string
	c   *systemdManager
}

const fakeSystemctlScript = `#!/bin/sh
dir=$(dirname "$0")
case "$1" in
show) cat "$dir/show" ;;
start|stop)
	echo "$1" >>"$dir/calls"
	if [ "$1" = start ] && [ -f "$dir/start-fails" ]; then cat "$dir/start-fails" >&2; exit 1; fi
	if [ -f "$dir/after-$1" ]; then cp "$dir/after-$1" "$dir/show"; fi ;;
*) echo "unexpected: $*" >&2; exit 9 ;;
esac
`

const fakeJournalctlScript = `#!/bin/sh
dir=$(dirname "$0")
echo "$*" >>"$dir/journal-args"
cat "$dir/journal"
`

func newFakeSystemctl(t *testing.T) *fakeSystemctl {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake systemctl is a shell script")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "systemctl"), []byte(fakeSystemctlScript), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "journalctl"), []byte(fakeJournalctlScript), 0o755))
	f := &fakeSystemctl{dir: dir}
	f.c = &systemdManager{unit: "receiptd.service", systemctl: filepath.Join(dir, "systemctl"),
		journalctl: filepath.Join(dir, "journalctl"), uninstallUnit: func() error {
			f.write(t, "show", unitNotFound)
			return nil
		}}
	f.write(t, "journal", "")
	f.c.settleFor = 400 * time.Millisecond
	return f
}

func (f *fakeSystemctl) write(t *testing.T, name, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o644))
}

func (f *fakeSystemctl) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

// run is one service command against the fake.
func (f *fakeSystemctl) run(action string) (stdout string, err error) {
	var out bytes.Buffer
	err = manage(&out, f.c, action)
	return out.String(), err
}

const (
	unitNotFound = "LoadState=not-found\nActiveState=inactive\nSubState=dead\nResult=success\nFragmentPath=\n"
	unitStopped  = "LoadState=loaded\nActiveState=inactive\nSubState=dead\nResult=success\n" +
		"FragmentPath=/etc/systemd/system/receiptd.service\nInvocationID=\n"
	unitRunning = "LoadState=loaded\nActiveState=active\nSubState=running\nResult=success\n" +
		"FragmentPath=/etc/systemd/system/receiptd.service\nInvocationID=5e1f\n"
	unitRestarting = "LoadState=loaded\nActiveState=activating\nSubState=auto-restart\nResult=exit-code\n" +
		"ExecMainStatus=2\nFragmentPath=/etc/systemd/system/receiptd.service\nInvocationID=0bad\n"
)

func TestServiceCommandsNotInstalled(t *testing.T) {
	t.Parallel()
	f := newFakeSystemctl(t)
	f.write(t, "show", unitNotFound)
	for _, action := range []string{"status", "start", "stop", "restart"} {
		_, err := f.run(action)
		require.EqualError(t, err, "service receiptd is not installed; install it with: receiptd install", action)
	}
	out, err := f.run("uninstall")
	require.NoError(t, err)
	require.Equal(t, "service receiptd is not installed; nothing to remove\n", out)
	require.Empty(t, f.read(t, "calls"), "nothing was started or stopped")
}

func TestServiceCommandsStoppedAndRunning(t *testing.T) {
	t.Parallel()
	f := newFakeSystemctl(t)
	f.write(t, "show", unitStopped)
	_, err := f.run("status")
	require.EqualError(t, err, "service receiptd is installed but stopped; start it with: receiptd start")
	out, err := f.run("stop")
	require.NoError(t, err)
	require.Equal(t, "receiptd: already stopped\n", out)

	f.write(t, "after-start", unitRunning)
	out, err = f.run("start")
	require.NoError(t, err)
	require.Equal(t, "receiptd: started, running\n", out)
	out, err = f.run("status")
	require.NoError(t, err)
	require.Equal(t, "receiptd: running\n", out)

	f.write(t, "after-stop", unitStopped)
	out, err = f.run("uninstall")
	require.NoError(t, err)
	require.Equal(t, "receiptd: uninstalled (systemd unit receiptd.service removed)\n", out)
	require.Equal(t, "start\nstop\n", f.read(t, "calls"), "a running service is stopped before its unit goes")
}

// TestServiceStartThatFails: systemctl start succeeds for a Type=simple
// unit whose daemon then refuses its config; start watches, and reports
// the daemon's own words from that run's journal.
func TestServiceStartThatFails(t *testing.T) {
	t.Parallel()
	f := newFakeSystemctl(t)
	f.write(t, "show", unitStopped)
	f.write(t, "after-start", unitRestarting)
	f.write(t, "journal", `{"level":"info","ts":1,"msg":"config loaded","path":"/etc/receiptd/config.toml"}
receiptd run: /etc/receiptd/config.toml: 1 problem:
  line 3: sync.concurrency: must be a whole number, not the text "2" (remove the quotes)
`)
	_, err := f.run("start")
	require.EqualError(t, err, "service receiptd failed to start: receiptd run: /etc/receiptd/config.toml: 1 problem:\n"+
		`    line 3: sync.concurrency: must be a whole number, not the text "2" (remove the quotes)`)
	require.Equal(t, "_SYSTEMD_INVOCATION_ID=0bad -o cat --no-pager -n 40\n", f.read(t, "journal-args"),
		"the reason comes from the failed run only")

	_, err = f.run("status")
	require.ErrorContains(t, err, "service receiptd failed to start: receiptd run: ")

	f.write(t, "journal", `{"level":"error","ts":1,"msg":"open database","error":"database /var/lib/receiptd/receiptd.db is locked"}`+"\n")
	_, err = f.run("status")
	require.EqualError(t, err, "service receiptd failed to start: open database: database /var/lib/receiptd/receiptd.db is locked")

	f.write(t, "journal", "")
	_, err = f.run("status")
	require.EqualError(t, err, "service receiptd failed to start: systemd reports exit-code, exit status 2; "+
		"see: journalctl -u receiptd.service")
}

// TestServiceStartRefusedBySystemd: systemctl's own message, never a bare
// "exit status 1".
func TestServiceStartRefusedBySystemd(t *testing.T) {
	t.Parallel()
	f := newFakeSystemctl(t)
	f.write(t, "show", unitStopped)
	f.write(t, "start-fails", "Job for receiptd.service failed because the control process exited with error code.\n")
	_, err := f.run("start")
	require.EqualError(t, err, f.c.systemctl+" start receiptd.service: "+
		"Job for receiptd.service failed because the control process exited with error code.")
	require.NotContains(t, err.Error(), "exit status")
}

func TestServicePackagedUnitIsNotUninstalled(t *testing.T) {
	t.Parallel()
	f := newFakeSystemctl(t)
	f.write(t, "show", strings.Replace(unitRunning, "/etc/systemd/system/", "/lib/systemd/system/", 1))
	_, err := f.run("uninstall")
	require.EqualError(t, err, "service receiptd is installed by the receiptd package; remove the package instead "+
		"(apt remove receiptd, or dnf remove receiptd)")
	require.Empty(t, f.read(t, "calls"))
}

func TestWithoutServiceManager(t *testing.T) {
	t.Parallel()
	etc := t.TempDir()
	why := "this system does not run systemd (there is no /run/systemd/system)"
	var out bytes.Buffer
	env := &out
	require.EqualError(t, withoutServiceManager(env, "status", why, etc),
		"service receiptd is not installed: this system does not run systemd (there is no /run/systemd/system)")
	require.NoError(t, withoutServiceManager(env, "uninstall", why, etc))
	require.Equal(t, "service receiptd is not installed: "+why+"; nothing to remove\n", out.String())

	// A SysV script and its links, as receiptd install wrote them before it
	// refused to.
	script := filepath.Join(etc, "init.d", "receiptd")
	require.NoError(t, os.MkdirAll(filepath.Dir(script), 0o755))
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755))
	for _, link := range []string{"rc2.d/S50receiptd", "rc0.d/K02receiptd"} {
		require.NoError(t, os.MkdirAll(filepath.Join(etc, filepath.Dir(link)), 0o755))
		require.NoError(t, os.Symlink(script, filepath.Join(etc, link)))
	}
	out.Reset()
	require.NoError(t, withoutServiceManager(env, "uninstall", why, etc))
	require.Equal(t, "receiptd: removed "+script+", the SysV script an earlier receiptd install wrote "+
		"(stop a running receiptd yourself)\n", out.String())
	left, err := filepath.Glob(filepath.Join(etc, "*", "*receiptd"))
	require.NoError(t, err)
	require.Empty(t, left)
}

func TestReasonLines(t *testing.T) {
	t.Parallel()
	out := "{\"level\":\"info\",\"msg\":\"a\"}\nplain 1\n{\"level\":\"warn\",\"msg\":\"w\"}\n\n" +
		"{\"level\":\"error\",\"msg\":\"e\",\"error\":\"boom\"}\nnot {json\n"
	require.Equal(t, []string{"plain 1", "w", "e: boom", "not {json"}, reasonLines(out, 8))
	require.Equal(t, []string{"e: boom", "not {json"}, reasonLines(out, 2))
}

// TestPackageRemoveSaysWhatStays runs the package's postremove script as
// dpkg does on "remove" (which deletes nothing): it names what stays.
func TestPackageRemoveSaysWhatStays(t *testing.T) {
	if runtime.GOOS != "linux" || systemdMissing() == "" {
		t.Skip("needs Linux without systemd: the script would reload systemd")
	}
	for _, arg := range []string{"remove", "0"} {
		out, err := exec.Command("sh", "../../packaging/scripts/postremove.sh", arg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "receiptd: removed the program and the service. Kept: /etc/receiptd, the database "+
			"/var/lib/receiptd (receipts not yet sent, and the audit trail) and the system user receiptd.\n", string(out))
	}
	out, err := exec.Command("sh", "../../packaging/scripts/postremove.sh", "upgrade").CombinedOutput()
	require.NoError(t, err)
	require.Empty(t, string(out), "an upgrade removes nothing and says nothing")
}

// TestServiceArgsWithoutAFile: install's note "the service uses the
// defaults until it does" is true only if the service runs without
// -config (cmd/receiptd's TestRunWithAMissingConfigFile: with -config, a
// missing file is an error).
func TestServiceArgsWithoutAFile(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"run"}, serviceArgs(Definition{Path: "/etc/receiptd/config.toml", Defaulted: true}))
	require.Equal(t, []string{"run", "-config", "/srv/r.toml"}, serviceArgs(Definition{Path: "/srv/r.toml"}))
}
