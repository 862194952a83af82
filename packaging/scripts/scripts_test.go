// Package scripts_test runs the deb/rpm maintainer scripts in this folder
// the way dpkg and rpm do, with stand-ins for systemctl, journalctl,
// install, getent and /usr/bin/receiptd on PATH that record their calls:
// an upgrade whose new version does not stay up fails loudly with the
// daemon's own words, and a reinstall after `apt remove` enables and
// starts the service again.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// standIn is the shell script every stand-in command runs: it records
// "name args" in $FAKE_LOG and answers as the fake service state says.
// $FAKE_STATE/active: the service is running before the script runs
// (is-active); $FAKE_STATE/crash: the new version exits at once, so after
// a restart the unit is in auto-restart with another MainPID.
const standIn = `#!/bin/sh
name=$(basename "$0")
echo "$name $*" >>"$FAKE_LOG"
case "$name $*" in
"systemctl is-active --quiet receiptd.service") [ -e "$FAKE_STATE/active" ] ;;
"systemctl restart receiptd.service") echo 1 >"$FAKE_STATE/restarts"; exit 0 ;;
"systemctl show -p MainPID --value receiptd.service")
	if [ -e "$FAKE_STATE/crash" ] && [ -e "$FAKE_STATE/looked" ]; then echo 0; else echo 4242; fi
	: >"$FAKE_STATE/looked" ;;
"systemctl show -p ActiveState --value receiptd.service")
	if [ -e "$FAKE_STATE/crash" ]; then echo activating; else echo active; fi ;;
journalctl*)
	echo '{"level":"error","msg":"open database /var/lib/receiptd/receiptd.db: database was written by a newer receiptd (schema version 4; this receiptd reads up to 3): install receiptd 2.0.0 or later"}' ;;
getent*) exit 0 ;;
*) exit 0 ;;
esac
`

type rig struct {
	root, log, state string
	env              []string
}

func newRig(t *testing.T, systemd bool) *rig {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the deb/rpm scripts run on Linux")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	r := &rig{root: filepath.Join(dir, "root"), log: filepath.Join(dir, "calls.log"), state: filepath.Join(dir, "state")}
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{bin, r.state, filepath.Join(r.root, "usr", "bin")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	if systemd {
		require.NoError(t, os.MkdirAll(filepath.Join(r.root, "run", "systemd", "system"), 0o755))
	}
	for _, name := range []string{"systemctl", "journalctl", "install", "getent", "groupadd", "useradd"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(standIn), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(r.root, "usr", "bin", "receiptd"), []byte(standIn), 0o755))
	r.env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin", "FAKE_LOG="+r.log, "FAKE_STATE="+r.state,
		"RECEIPTD_PKG_TEST_ROOT="+r.root, "RECEIPTD_PKG_WAIT=0")
	return r
}

func (r *rig) set(t *testing.T, flags ...string) {
	t.Helper()
	for _, f := range flags {
		require.NoError(t, os.WriteFile(filepath.Join(r.state, f), nil, 0o644))
	}
}

// run runs script with args and returns its exit code and output.
func (r *rig) run(t *testing.T, script string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{script}, args...)...)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

func (r *rig) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(r.log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(l, "install ") && !strings.HasPrefix(l, "getent ") {
			out = append(out, l)
		}
	}
	return out
}

func TestUpgrade(t *testing.T) {
	restartAndWatch := []string{"systemctl daemon-reload", "systemctl is-active --quiet receiptd.service",
		"systemctl restart receiptd.service", "systemctl show -p MainPID --value receiptd.service",
		"systemctl show -p ActiveState --value receiptd.service"}
	cases := []struct {
		name     string
		args     []string // postinstall's, as dpkg or rpm give them
		state    []string
		code     int
		calls    []string
		say, not []string
	}{
		{"deb, new version stays up", []string{"configure", "1.0.0-1"}, []string{"active"}, 0,
			append(restartAndWatch, "systemctl show -p MainPID --value receiptd.service"), nil, []string{"ERROR"}},
		{"rpm, new version stays up", []string{"2"}, []string{"active"}, 0,
			append(restartAndWatch, "systemctl show -p MainPID --value receiptd.service"), nil, []string{"ERROR"}},
		{"deb, new version refuses to start", []string{"configure", "1.0.0-1"}, []string{"active", "crash"}, 1,
			append(restartAndWatch, "journalctl -u receiptd.service -n 20 --no-pager -o cat"),
			[]string{"ERROR: the service does not stay up on the new version", "written by a newer receiptd",
				"install receiptd 2.0.0 or later", "receiptd restart"}, nil},
		{"rpm, new version refuses to start", []string{"2"}, []string{"active", "crash"}, 1,
			append(restartAndWatch, "journalctl -u receiptd.service -n 20 --no-pager -o cat"),
			[]string{"ERROR: the service does not stay up", "written by a newer receiptd"}, nil},
		{"a stopped service stays stopped", []string{"configure", "1.0.0-1"}, nil, 0,
			[]string{"systemctl daemon-reload", "systemctl is-active --quiet receiptd.service"}, nil, []string{"ERROR"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, true)
			r.set(t, tc.state...)
			code, out := r.run(t, "postinstall.sh", tc.args...)
			require.Equal(t, tc.code, code, out)
			require.Equal(t, tc.calls, r.calls(t), out)
			for _, s := range tc.say {
				require.Contains(t, out, s)
			}
			for _, s := range tc.not {
				require.NotContains(t, out, s)
			}
		})
	}
}

func TestFreshInstallEnablesAndStarts(t *testing.T) {
	for name, args := range map[string][]string{"deb": {"configure", ""}, "rpm": {"1"}} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, true)
			code, out := r.run(t, "postinstall.sh", args...)
			require.Equal(t, 0, code, out)
			require.Equal(t, []string{"systemctl daemon-reload", "systemctl enable receiptd.service", "receiptd start"}, r.calls(t))
		})
	}
}

// TestReinstallAfterRemoveEnablesAndStarts is the sequence dpkg runs for
// `apt remove receiptd` then `apt install receiptd` (the configuration
// kept between them): the service that remove disabled is enabled and
// started again, not left off as by an upgrade.
func TestReinstallAfterRemoveEnablesAndStarts(t *testing.T) {
	r := newRig(t, true)
	r.set(t, "active")
	code, out := r.run(t, "preremove.sh", "remove")
	require.Equal(t, 0, code, out)
	require.Equal(t, []string{"systemctl stop receiptd.service", "systemctl disable receiptd.service"}, r.calls(t))
	require.NoError(t, os.Remove(filepath.Join(r.state, "active")))
	require.NoError(t, os.Remove(r.log))
	require.NoError(t, os.MkdirAll(filepath.Join(r.root, "etc", "receiptd"), 0o750)) // kept by remove

	code, out = r.run(t, "preinstall.sh", "install", "1.0.0-1")
	require.Equal(t, 0, code, out)
	code, out = r.run(t, "postinstall.sh", "configure", "1.0.0-1")
	require.Equal(t, 0, code, out)
	require.Equal(t, []string{"systemctl daemon-reload", "systemctl enable receiptd.service", "receiptd start"}, r.calls(t))
	require.NoFileExists(t, filepath.Join(r.root, "etc", "receiptd", ".reinstall"), "the note is used once")

	// The next upgrade is an upgrade again.
	require.NoError(t, os.Remove(r.log))
	r.set(t, "active")
	_, _ = r.run(t, "preinstall.sh", "upgrade", "1.0.0-1")
	code, out = r.run(t, "postinstall.sh", "configure", "1.0.0-1")
	require.Equal(t, 0, code, out)
	require.Contains(t, r.calls(t), "systemctl restart receiptd.service")
	require.NotContains(t, r.calls(t), "systemctl enable receiptd.service")
}

func TestWithoutSystemdNothingIsStarted(t *testing.T) {
	r := newRig(t, false)
	code, out := r.run(t, "postinstall.sh", "configure", "1.0.0-1")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "systemd is not running here")
	require.NotContains(t, r.calls(t), "systemctl restart receiptd.service")
}
