//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// nobody is the unprivileged user and group the tests run the binary as.
const nobody = 65534

// runUnprivileged runs the real binary as user nobody (the caller is root)
// and returns its exit code and standard error.
func runUnprivileged(t *testing.T, args ...string) (int, string) {
	t.Helper()
	bin := receiptdBinary(t)
	require.NoError(t, os.Chmod(filepath.Dir(bin), 0o755), "nobody must reach the binary")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := binCmd(ctx, t, args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stderr.String()
	}
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("this root may not switch to another user (no CAP_SETUID): %v", err)
	}
	require.NoError(t, err, stderr.String())
	return 0, stderr.String()
}
