package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"syscall"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/store"
)

// Refusal is a start-up refusal that the person at the till can act on:
// the configuration key at fault, what is wrong in words (naming the path
// or address once), and the next step as a command for this system. It
// wraps the cause, so errors.Is still finds store.ErrLocked,
// fs.ErrPermission or the system's "address in use".
type Refusal struct {
	Key     string // the config key (data_dir, listen) or the flag (-listen)
	Problem string // what is wrong, in words
	Fix     string // the next step
	Err     error  // the cause
}

func (r *Refusal) Error() string { return r.Key + ": " + r.Problem + "\nNext step: " + r.Fix }
func (r *Refusal) Unwrap() error { return r.Err }

// PosAPIPort is the port PosAPI listens on unless told otherwise, and so
// the one a till's POS already uses: receiptd's default listen takes it.
const PosAPIPort = "7080"

// openRefusal turns the data directory's refusals to open into a Refusal
// where there is a next step to give (another receiptd holds the
// database; receiptd may not write the directory), and leaves the others
// (a damaged or replaced database, which name their own way back) as they
// are.
func openRefusal(dir string, err error) error {
	var ro bool
	switch {
	case errors.Is(err, store.ErrLocked):
		return &Refusal{Key: "data_dir", Err: err,
			Problem: fmt.Sprintf("the database %s is locked: another receiptd is running on this data directory",
				dbPath(dir)),
			Fix: lockedFix(runtime.GOOS)}
	case errors.Is(err, fs.ErrPermission):
	case errors.Is(err, syscall.EROFS):
		ro = true
	default:
		return err
	}
	_, statErr := os.Stat(dir)
	exists := statErr == nil
	who := currentUser()
	why := "permission denied"
	if ro {
		why = "read-only file system"
	}
	return &Refusal{Key: "data_dir", Err: err,
		Problem: fmt.Sprintf("receiptd runs as user %s, which may not write in %s (%s)", who, dir, why),
		Fix:     dataDirFix(runtime.GOOS, dir, who, exists, ro)}
}

func dbPath(dir string) string { return layout.DB(dir) }

// lockedFix says which command shows the other receiptd, on goos.
func lockedFix(goos string) string {
	if goos == "windows" {
		return "see which: `sc query receiptd` (the service) or `tasklist /fi \"imagename eq receiptd.exe\"`; " +
			"stop it (`receiptd stop`), or give this one another data_dir"
	}
	return "see which: `systemctl status receiptd` (the service) or `pgrep -a receiptd`; " +
		"stop it (`sudo systemctl stop receiptd`), or give this one another data_dir"
}

// dataDirFix is the command that lets user write dir on goos, as the
// packages set it up: on Linux the service runs as user receiptd and its
// unit may write only /var/lib/receiptd and /var/log/receiptd
// (ReadWritePaths); on Windows the service runs as LocalSystem and the MSI
// gives SYSTEM and Administrators full control (icacls).
func dataDirFix(goos, dir, user string, exists, readOnly bool) string {
	if goos == "windows" {
		mk := ""
		if !exists {
			mk = fmt.Sprintf("mkdir \"%s\" & ", dir)
		}
		return fmt.Sprintf("as Administrator, %sicacls \"%s\" /grant *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F "+
			"(SYSTEM, which the service runs as, and Administrators, as the installer grants C:\\ProgramData\\receiptd); "+
			"run by hand, receiptd then needs an Administrator prompt", mk, dir)
	}
	unit := fmt.Sprintf("the packages' systemd unit lets the service write only /var/lib/receiptd and /var/log/receiptd: "+
		"for another data_dir add ReadWritePaths=%s with `sudo systemctl edit receiptd`", dir)
	if readOnly {
		return unit + ", or use data_dir = \"/var/lib/receiptd\""
	}
	mk := ""
	if !exists {
		mk = fmt.Sprintf("sudo mkdir -p %s && ", dir)
	}
	fix := fmt.Sprintf("%ssudo chown -R %s: %s", mk, user, dir)
	if user == serviceUser {
		return fix + "; " + unit
	}
	return fix + " (the service of the packages runs as user " + serviceUser + ": when this is its directory, " +
		"start it as the service instead, `sudo systemctl start receiptd`); " + unit
}

// serviceUser is the user the packages' service runs as (packaging/).
const serviceUser = "receiptd"

// currentUser names the user this process runs as.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// listenRefusal turns a listen address in use into a Refusal naming key
// (listen) and what to do; other failures to bind stay as they were.
func listenRefusal(key, addr string, err error) error {
	why, ok := PortInUse(err)
	if !ok {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	_, port, _ := net.SplitHostPort(addr)
	fix := "another program holds it (another receiptd?): stop it, or set listen to a free port and point the POS there; "
	if port == PosAPIPort {
		fix = "on a till that is usually PosAPI itself, which listens on " + PosAPIPort + " unless told otherwise: " +
			"move PosAPI to 7081 (where upstream.base_url expects it), or set listen to another port " +
			"(listen = \"127.0.0.1:7090\") and point the POS there; "
	}
	return &Refusal{Key: key, Err: err, Problem: addr + " is in use by another program (" + why + ")",
		Fix: fix + PortHolder(runtime.GOOS, port) + " shows which program holds it"}
}

// PortHolder is the command that shows which program listens on port, on
// goos.
func PortHolder(goos, port string) string {
	if goos == "windows" {
		return "`netstat -ano | findstr :" + port + "` (then `tasklist /fi \"pid eq PID\"`)"
	}
	return "`sudo ss -ltnp 'sport = :" + port + "'`"
}

// wsaeaddrinuse is Windows' WSAEADDRINUSE, which package syscall does not
// name.
const wsaeaddrinuse syscall.Errno = 10048

// PortInUse reports whether err is a listen refused because another
// socket holds the address, and the system's words for it.
func PortInUse(err error) (string, bool) {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return "", false
	}
	if errno == syscall.EADDRINUSE || (runtime.GOOS == "windows" && errno == wsaeaddrinuse) {
		return errno.Error(), true
	}
	return "", false
}
