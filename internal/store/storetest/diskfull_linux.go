//go:build linux

package storetest

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// RunChild runs the test named child in a subprocess of the test binary,
// with the environment variable env set to value, and returns its combined
// output. A failing child fails t. The child tells itself apart by env.
func RunChild(t testing.TB, child, env, value string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+value)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child output:\n%s", out)
	return string(out)
}

// RunDiskFullChild is the parent of a disk-full test: it runs child as
// RunChild does, with env naming a new database file in t.TempDir(), and
// returns that path and the number the child printed on its line
// "<result>=N" (how much it stored before the disk was full). A child
// that printed no such line fails t.
func RunDiskFullChild(t testing.TB, child, env, result string) (path string, n int) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "receiptd.db")
	out := RunChild(t, child, env, path)
	for _, line := range strings.Split(out, "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), result+"=%d", &n); err == nil {
			return path, n
		}
	}
	require.FailNow(t, "the child printed no "+result, "child output:\n%s", out)
	return "", 0
}

// LimitFileGrowth lets every file of this process grow to path's current
// size plus room and no further: writes past it fail with EFBIG, the error
// path ENOSPC takes through bbolt, so a test fills the "disk" without root
// or a tiny filesystem. SIGXFSZ is ignored so that such a write fails
// instead of killing the process. The limit holds for the whole process:
// call it only in a RunChild subprocess. lift removes the limit again, as
// space coming back.
func LimitFileGrowth(t testing.TB, path string, room int64) (lift func()) {
	t.Helper()
	signal.Ignore(syscall.SIGXFSZ)
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	low := syscall.Rlimit{Cur: uint64(fi.Size() + room), Max: old.Max}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &low))
	return func() { require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)) }
}
