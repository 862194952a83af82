package service

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestRestrictDir: the folder's DACL is protected and names only SYSTEM
// and Administrators; a file created in it later inherits exactly those.
func TestRestrictDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, restrictDir(dir))
	got := dacl(t, dir)
	if got != restrictedSDDL && testkit.UnderWine() {
		t.Skipf("Wine limitation: SetNamedSecurityInfo succeeds, but the DACL read back is %s, made up "+
			"from the folder's Unix mode bits: Wine keeps no file ACLs", got)
	}
	require.Equal(t, "D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)", got)

	file := filepath.Join(dir, "receiptd.db")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	require.Equal(t, "D:AI(A;ID;FA;;;SY)(A;ID;FA;;;BA)", dacl(t, file))
}

func dacl(t *testing.T, path string) string {
	t.Helper()
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	require.NoError(t, err)
	return sd.String()
}
