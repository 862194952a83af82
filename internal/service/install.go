package service

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"

	kservice "github.com/kardianos/service"

	"github.com/receiptd/receiptd/internal/config"
)

// Definition is the configuration a service is installed with, and where
// it came from.
type Definition struct {
	Config config.Config
	Path   string // the file read, or the default path that was missing
	// Defaulted: no file at the default path, so the defaults apply.
	Defaulted bool
}

// CheckInstall refuses an install this system cannot take, before the
// configuration is read: on Linux without systemd, receiptd installs
// nothing (it would be a root-running init script). cfgPath is the config
// file the operator named, for the advice.
func CheckInstall(cfgPath string) error {
	if runtime.GOOS == "linux" {
		if why := systemdMissing(); why != "" {
			return fmt.Errorf("%s, and receiptd installs itself only as a systemd unit (user %s, hardened). "+
				"Run it under this system's own supervisor as an unprivileged user instead: receiptd run -config %s",
				why, serviceUser, cfgPath)
		}
	}
	return nil
}

// Install registers the service for def (def.Path absolute, the
// configuration already checked: a service that cannot start is worse
// than an install that refuses). On Linux it installs only a systemd unit
// (user receiptd, the packaged unit's hardening); see CheckInstall.
func Install(out io.Writer, def Definition) error {
	s, err := newService(def)
	if err != nil {
		return err
	}
	if err := refuseReinstall(s); err != nil {
		return err
	}
	if runtime.GOOS == "linux" {
		if err := prepareLinux(out, def); err != nil {
			return err
		}
	}
	if runtime.GOOS == "windows" {
		if err := prepareWindows(out, def); err != nil {
			return err
		}
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("install service %s: %w", Name, err)
	}
	if runtime.GOOS == "linux" {
		fmt.Fprintf(out, "installed service %s: systemd unit /etc/systemd/system/%s.service, user %s, "+
			"the packaged unit's hardening; config %s\n", Name, Name, serviceUser, def.Path)
	} else {
		fmt.Fprintf(out, "installed service %s (%s), config %s\n", Name, s.Platform(), def.Path)
	}
	if def.Defaulted {
		fmt.Fprintf(out, "note: %s does not exist yet; the service uses the defaults until it does (restart it after writing the file)\n", def.Path)
	}
	fmt.Fprintln(out, "start it with: receiptd start")
	return nil
}

// refuseReinstall stops install from overwriting a service that exists.
func refuseReinstall(s kservice.Service) error {
	st, err := managerFor(s).status()
	if err != nil || st.state == svcNotInstalled {
		// A service manager that cannot answer fails the install itself,
		// with its own words.
		return nil
	}
	if st.packaged {
		return fmt.Errorf("service %s is installed by the receiptd package; manage it with receiptd start|stop|status", Name)
	}
	return fmt.Errorf("service %s is already installed; to install it again, first: receiptd uninstall", Name)
}

// managerFor is the service manager that runs s: systemd on Linux, else
// kardianos/service.
func managerFor(s kservice.Service) manager {
	if runtime.GOOS == "linux" {
		return newSystemdManager(s.Uninstall)
	}
	return newKardianosManager(s)
}

// Manage runs one service command (uninstall, start, stop, restart,
// status) and says what it found: "not installed", "installed but
// stopped", or "failed to start" with the daemon's reason.
func Manage(out io.Writer, action string) error {
	if runtime.GOOS == "linux" {
		if why := systemdMissing(); why != "" {
			return withoutServiceManager(out, action, why, "/etc")
		}
	}
	// The definition matters only to install; any config will do.
	s, err := newService(Definition{Config: config.Default(), Path: config.DefaultPath()})
	if err != nil {
		return err
	}
	return manage(out, managerFor(s), action)
}

func newService(lc Definition) (kservice.Service, error) {
	sc, err := serviceConfig(lc.Path, lc.Config)
	if err != nil {
		return nil, err
	}
	sc.Arguments = serviceArgs(lc)
	s, err := kservice.New(&program{cfg: lc.Config}, sc)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return s, nil
}

// prepareLinux creates the service user and the directories the unit
// names in ReadWritePaths (systemd refuses to start a unit whose
// ReadWritePaths do not exist).
func prepareLinux(out io.Writer, lc Definition) error {
	u, err := user.Lookup(serviceUser)
	if err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return fmt.Errorf("look up user %s: %w", serviceUser, err)
		}
		cmd := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/var/lib/receiptd", "--shell", "/usr/sbin/nologin", serviceUser)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("create user %s: %w: %s", serviceUser, err, out)
		}
		fmt.Fprintf(out, "created system user %s\n", serviceUser)
		if u, err = user.Lookup(serviceUser); err != nil {
			return fmt.Errorf("look up user %s: %w", serviceUser, err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, dir := range writablePaths(lc.Config) {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return fmt.Errorf("give %s to %s: %w", dir, serviceUser, err)
		}
	}
	return nil
}

// serviceArgs is the command line the service runs. With no file yet,
// "run" without -config uses the defaults until the file at the default
// path exists (with -config, a missing file is an error, and the service
// would never start).
func serviceArgs(lc Definition) []string {
	if lc.Defaulted {
		return []string{"run"}
	}
	return []string{"run", "-config", lc.Path}
}
