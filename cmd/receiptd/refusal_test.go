package main

import (
	"errors"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// Issue 40, item 4: every start-up refusal names the key and the fix. A
// data_dir receiptd may not write names the key, the directory once, the
// user receiptd runs as and the command that gives it the directory (made
// first when it is missing). Root writes anywhere, so as root (how CI
// runs) the binary runs as user nobody.
func TestRunRefusesUnwritableDataDir(t *testing.T) {
	testkit.Parallel(t)
	if runtime.GOOS == "windows" {
		t.Skip("file modes do not make a directory unwritable on Windows")
	}
	parent, err := os.MkdirTemp("", "receiptd-unwritable-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	existing := filepath.Join(parent, "data")
	require.NoError(t, os.Mkdir(existing, 0o555))
	for _, tc := range []struct {
		name, dir, fix string
	}{
		{"missing", filepath.Join(parent, "new"), "Next step: sudo mkdir -p DIR && sudo chown -R WHO: DIR "},
		{"existing", existing, "Next step: sudo chown -R WHO: DIR "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(parent, tc.name+".toml")
			require.NoError(t, os.WriteFile(cfg, []byte("listen = \"127.0.0.1:0\"\ndata_dir = "+tomlString(tc.dir)+"\n"), 0o644))
			require.NoError(t, os.Chmod(parent, 0o555)) // others reach it, may not write it
			var code int
			var stderr string
			var who string
			if os.Geteuid() == 0 {
				code, stderr = runUnprivileged(t, "run", "-config", cfg)
				who = usernameOf(nobody)
			} else {
				code, stderr = runRefusedArgs(t, "run", "-config", cfg)
				who = usernameOf(os.Getuid())
			}
			require.NoError(t, os.Chmod(parent, 0o755))
			require.Equal(t, exitFailure, code, stderr)
			require.Contains(t, stderr, "data_dir: receiptd runs as user "+who+", which may not write in "+tc.dir+" (permission denied)\n")
			require.Contains(t, stderr, strings.NewReplacer("DIR", tc.dir, "WHO", who).Replace(tc.fix))
			require.Contains(t, stderr, "the service of the packages runs as user receiptd")
			require.Contains(t, stderr, "add ReadWritePaths="+tc.dir+" with `sudo systemctl edit receiptd`")
			require.Equal(t, 1, strings.Count(lineWith(stderr, "data_dir: "), tc.dir), "the directory once: %s", stderr)
		})
	}
}

// lineWith is the first line of s that contains sub.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// usernameOf is how receiptd names the user uid.
func usernameOf(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}

// A listen address in use names the key, the address and what to do, and
// the command that shows which program holds it.
func TestRunRefusesPortInUse(t *testing.T) {
	testkit.Parallel(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	code, stderr := runRefused(t, "listen = \""+addr+"\"\ndata_dir = "+tomlString(t.TempDir())+"\n")
	require.Equal(t, exitFailure, code, stderr)
	require.Contains(t, stderr, "listen: "+addr+" is in use by another program (")
	require.Contains(t, stderr, "Next step: another program holds it (another receiptd?): stop it, or set listen to a free port and point the POS there; ")
	require.Contains(t, stderr, portHolder(port)+" shows which program holds it")
	require.NotContains(t, stderr, "PosAPI", "only 7080 is PosAPI's")
}

func portHolder(port string) string {
	if runtime.GOOS == "windows" {
		return "`netstat -ano | findstr :" + port + "` (then `tasklist /fi \"pid eq PID\"`)"
	}
	return "`sudo ss -ltnp 'sport = :" + port + "'`"
}

// holdPort listens on addr for the test, or finds it held already by
// another program: either way it is busy.
func holdPort(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		t.Cleanup(func() { _ = ln.Close() })
	case errors.Is(err, syscall.EADDRINUSE):
	default:
		t.Skipf("cannot hold %s: %v", addr, err)
	}
}

// Issue 40: `receiptd demo` refuses a busy 7080 instead of moving to a free
// port, where README's pasted commands would reach the program on 7080
// (usually PosAPI); the same for its simulator's address. It stops within
// the 10 seconds of a start-up refusal, exit 1 as run's busy listen.
func TestDemoRefusesABusyPort(t *testing.T) {
	testkit.Parallel(t)
	t.Run("7080", func(t *testing.T) {
		holdPort(t, "127.0.0.1:7080")
		code, stderr := runRefusedArgs(t, "demo", "-sim-listen", testkit.ClosedAddr(t))
		require.Equal(t, exitFailure, code, stderr)
		require.Contains(t, stderr, "receiptd demo: -listen: 127.0.0.1:7080 is in use by another program (")
		require.Contains(t, stderr, "Next step: on a till that is usually PosAPI itself, which listens on 7080 unless told otherwise: "+
			"give the demo another port: -listen 127.0.0.1:7090, and use that port in the commands you paste; ")
		require.Contains(t, stderr, portHolder("7080"))
		require.NotContains(t, stderr, "receiptd ready")
	})
	t.Run("simulator", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		code, stderr := runRefusedArgs(t, "demo", "-listen", testkit.ClosedAddr(t), "-sim-listen", ln.Addr().String())
		require.Equal(t, exitFailure, code, stderr)
		require.Contains(t, stderr, "receiptd demo: -sim-listen: "+ln.Addr().String()+" is in use by another program (")
		require.Contains(t, stderr, "a `receiptd sim` or another demo may hold it: stop it, or give the demo's simulator another port: -sim-listen 127.0.0.1:7091")
	})
}
