package main

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/update/updatetest"
)

// TestUpdateApplyWhereTheSwitchIsNotBuilt: anywhere but Linux and
// Windows `update apply` refuses with exit 2 and says to use the package
// manager, before reading anything.
func TestUpdateApplyWhereTheSwitchIsNotBuilt(t *testing.T) {
	t.Parallel()
	require.NoError(t, switchBuilt("linux"))
	require.NoError(t, switchBuilt("windows"))
	err := switchBuilt("darwin")
	require.ErrorContains(t, err, "not built on darwin yet: install the release with the package manager")
	if switchBuilt(runtime.GOOS) != nil {
		code, _, stderr := runCLI(t, "update", "apply", filepath.Join(t.TempDir(), "receiptd.exe"))
		require.Equal(t, exitUsage, code)
		require.Contains(t, stderr, "not built on "+runtime.GOOS)
	}
}

// TestSignedVersion reads the version from the trusted comment, and
// asks for -version when the comment is not receiptd's.
func TestSignedVersion(t *testing.T) {
	t.Parallel()
	s := updatetest.NewSigner(t)
	v, err := signedVersion(s.Sign([]byte("file"), "receiptd 1.4.0 linux/amd64"))
	require.NoError(t, err)
	require.Equal(t, "1.4.0", v)
	_, err = signedVersion(s.Sign([]byte("file"), "timestamp:1700000000"))
	require.ErrorContains(t, err, "pass -version")
	_, err = signedVersion([]byte("not a signature"))
	require.ErrorContains(t, err, "not a minisign signature")
}

// TestUpdateUsage: update without apply or status, or apply without a
// file, is a usage error naming the commands.
func TestUpdateUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"update"}, "usage: receiptd update apply [flags] RELEASE | receiptd update status"},
		{[]string{"update", "install"}, "usage: receiptd update apply [flags] RELEASE | receiptd update status"},
		{[]string{"update", "apply"}, "usage: receiptd update apply [-config FILE]"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		require.Equal(t, exitUsage, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want)
	}
}
