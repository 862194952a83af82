package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/kardianos/service"

	"github.com/receiptd/receiptd/internal/config"
)

func init() {
	commands["install"] = command{summary: "install receiptd as a system service", run: runInstall}
	for _, a := range []struct{ name, summary string }{
		{"uninstall", "remove the system service"},
		{"start", "start the system service"},
		{"stop", "stop the system service"},
		{"restart", "restart the system service"},
		{"status", "show whether the system service is running"},
	} {
		commands[a.name] = command{summary: a.summary, run: serviceAction(a.name)}
	}
}

// runInstall registers the service. The configuration is checked first: a
// service that cannot start is worse than an install that refuses. On
// Linux it installs only a systemd unit (user receiptd, the packaged
// unit's hardening); without systemd it refuses rather than leave a
// root-running init script.
func runInstall(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "install", "install [-config FILE]")
	cfgPath := fs.String("config", "", "config file the service reads (default "+config.DefaultPath()+")")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if runtime.GOOS == "linux" {
		if why := systemdMissing(); why != "" {
			return fmt.Errorf("%s, and receiptd installs itself only as a systemd unit (user %s, hardened). "+
				"Run it under this system's own supervisor as an unprivileged user instead: receiptd run -config %s",
				why, serviceUser, configName(*cfgPath))
		}
	}
	lc, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if lc.path, err = filepath.Abs(lc.path); err != nil {
		return fmt.Errorf("config path: %w", err)
	}
	s, err := newService(lc)
	if err != nil {
		return err
	}
	if err := refuseReinstall(s); err != nil {
		return err
	}
	if runtime.GOOS == "linux" {
		if err := prepareLinux(env, lc); err != nil {
			return err
		}
	}
	if runtime.GOOS == "windows" {
		if err := prepareWindows(env, lc); err != nil {
			return err
		}
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("install service %s: %w", serviceName, err)
	}
	if runtime.GOOS == "linux" {
		fmt.Fprintf(env.stdout, "installed service %s: systemd unit /etc/systemd/system/%s.service, user %s, "+
			"the packaged unit's hardening; config %s\n", serviceName, serviceName, serviceUser, lc.path)
	} else {
		fmt.Fprintf(env.stdout, "installed service %s (%s), config %s\n", serviceName, s.Platform(), lc.path)
	}
	if lc.defaulted {
		fmt.Fprintf(env.stdout, "note: %s does not exist yet; the service uses the defaults until it does (restart it after writing the file)\n", lc.path)
	}
	fmt.Fprintln(env.stdout, "start it with: receiptd start")
	return nil
}

// refuseReinstall stops install from overwriting a service that exists.
func refuseReinstall(s service.Service) error {
	st, err := controlFor(s).status()
	if err != nil || st.state == svcNotInstalled {
		// A service manager that cannot answer fails the install itself,
		// with its own words.
		return nil
	}
	if st.packaged {
		return fmt.Errorf("service %s is installed by the receiptd package; manage it with receiptd start|stop|status", serviceName)
	}
	return fmt.Errorf("service %s is already installed; to install it again, first: receiptd uninstall", serviceName)
}

// controlFor is the service manager that runs s: systemd on Linux, else
// kardianos/service.
func controlFor(s service.Service) serviceControl {
	if runtime.GOOS == "linux" {
		return newSystemdControl(s.Uninstall)
	}
	return newKardianosControl(s)
}

// serviceAction runs one service command and says what it found: "not
// installed", "installed but stopped", or "failed to start" with the
// daemon's reason.
func serviceAction(action string) func(context.Context, *cmdEnv, []string) error {
	return func(_ context.Context, env *cmdEnv, args []string) error {
		fs := newFlagSet(env, action, action)
		if err := parseFlags(fs, args, 0); err != nil {
			return err
		}
		if runtime.GOOS == "linux" {
			if why := systemdMissing(); why != "" {
				return withoutServiceManager(env, action, why, "/etc")
			}
		}
		// The definition matters only to install; any config will do.
		s, err := newService(loadedConfig{cfg: config.Default(), path: config.DefaultPath()})
		if err != nil {
			return err
		}
		return controlAction(env, controlFor(s), action)
	}
}
func newService(lc loadedConfig) (service.Service, error) {
	sc, err := serviceConfig(lc.path, lc.cfg)
	if err != nil {
		return nil, err
	}
	sc.Arguments = serviceArgs(lc)
	s, err := service.New(&program{cfg: lc.cfg}, sc)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return s, nil
}

// prepareLinux creates the service user and the directories the unit
// names in ReadWritePaths (systemd refuses to start a unit whose
// ReadWritePaths do not exist).
func prepareLinux(env *cmdEnv, lc loadedConfig) error {
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
		fmt.Fprintf(env.stdout, "created system user %s\n", serviceUser)
		if u, err = user.Lookup(serviceUser); err != nil {
			return fmt.Errorf("look up user %s: %w", serviceUser, err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, dir := range writablePaths(lc.cfg) {
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
func serviceArgs(lc loadedConfig) []string {
	if lc.defaulted {
		return []string{"run"}
	}
	return []string{"run", "-config", lc.path}
}

// configName is the config file a command reads: path, or the default.
func configName(path string) string {
	if path == "" {
		return config.DefaultPath()
	}
	return path
}
