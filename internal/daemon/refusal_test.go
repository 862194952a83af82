package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/store"
)

// Issue 40: on 7080 the refusal says that PosAPI itself usually holds it,
// and both ways out: move PosAPI, or move listen and the POS.
func TestListenRefusalOnPosAPIsPort(t *testing.T) {
	inUse := &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}
	err := listenRefusal("listen", "127.0.0.1:7080", inUse)
	var r *Refusal
	require.ErrorAs(t, err, &r)
	require.ErrorIs(t, err, syscall.EADDRINUSE)
	require.Equal(t, "listen", r.Key)
	require.Equal(t, "127.0.0.1:7080 is in use by another program ("+syscall.EADDRINUSE.Error()+")", r.Problem)
	require.Contains(t, r.Fix, "on a till that is usually PosAPI itself, which listens on 7080 unless told otherwise: "+
		"move PosAPI to 7081 (where upstream.base_url expects it), or set listen to another port (listen = \"127.0.0.1:7090\") "+
		"and point the POS there; ")

	other := listenRefusal("listen", "127.0.0.1:80", &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EACCES)})
	require.NotErrorAs(t, other, &r, "only an address in use has this next step")
	require.ErrorIs(t, other, fs.ErrPermission)
}

// The next steps on Windows, where the service runs as LocalSystem and the
// MSI grants SYSTEM and Administrators full control with icacls.
func TestRefusalFixesOnWindows(t *testing.T) {
	require.Equal(t, `as Administrator, mkdir "D:\till" & icacls "D:\till" /grant *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F `+
		`(SYSTEM, which the service runs as, and Administrators, as the installer grants C:\ProgramData\receiptd); `+
		`run by hand, receiptd then needs an Administrator prompt`, dataDirFix("windows", `D:\till`, `SHOP\clerk`, false, false))
	require.NotContains(t, dataDirFix("windows", `D:\till`, `SHOP\clerk`, true, false), "mkdir")
	require.Contains(t, lockedFix("windows"), "`sc query receiptd`")
	require.Equal(t, "`netstat -ano | findstr :7080` (then `tasklist /fi \"pid eq PID\"`)", PortHolder("windows", "7080"))
}

// The service's own user is told to take the directory; another user,
// most often a person running receiptd by hand on the service's
// directory, is told first that it may be the service's.
func TestDataDirFixNamesTheServiceUser(t *testing.T) {
	own := dataDirFix("linux", "/srv/till", "receiptd", true, false)
	require.True(t, strings.HasPrefix(own, "sudo chown -R receiptd: /srv/till; the packages' systemd unit"), own)
	byHand := dataDirFix("linux", "/var/lib/receiptd", "alice", true, false)
	require.Contains(t, byHand, "sudo chown -R alice: /var/lib/receiptd (the service of the packages runs as user receiptd: "+
		"when this is its directory, start it as the service instead, `sudo systemctl start receiptd`)")
}

// A data_dir under systemd's ProtectSystem is read-only, not forbidden:
// the way out is the unit's ReadWritePaths.
func TestReadOnlyDataDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("ProtectSystem is systemd's: the read-only refusal and its fix are Linux's")
	}
	err := openRefusal("/srv/till", fmt.Errorf("open database: %w", &fs.PathError{Op: "mkdir", Path: "/srv/till", Err: syscall.EROFS}))
	var r *Refusal
	require.ErrorAs(t, err, &r)
	require.Contains(t, r.Problem, "which may not write in /srv/till (read-only file system)")
	require.Contains(t, r.Fix, "add ReadWritePaths=/srv/till with `sudo systemctl edit receiptd`, or use data_dir = \"/var/lib/receiptd\"")

	damaged := fmt.Errorf("open database: %w", store.ErrCorrupt)
	require.Equal(t, damaged, openRefusal("/srv/till", damaged), "a damaged database keeps its own words")
	require.False(t, errors.Is(openRefusal("/srv/till", damaged), fs.ErrPermission))
}
