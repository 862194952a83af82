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

// runInstall registers the service with `run -config <abs path>`. The
// configuration is checked first: a service that cannot start is worse
// than an install that refuses.
func runInstall(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "install", "install [-config FILE]")
	cfgPath := fs.String("config", "", "config file the service reads (default "+config.DefaultPath()+")")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
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
	if runtime.GOOS == "linux" {
		if err := prepareLinux(env, lc); err != nil {
			return err
		}
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("install service %s: %w", serviceName, err)
	}
	fmt.Fprintf(env.stdout, "installed service %s (%s), config %s\n", serviceName, s.Platform(), lc.path)
	if lc.defaulted {
		fmt.Fprintf(env.stdout, "note: %s does not exist yet; the service uses the defaults until it does\n", lc.path)
	}
	fmt.Fprintln(env.stdout, "start it with: receiptd start")
	return nil
}

// serviceAction runs one kardianos control action, or prints the status.
func serviceAction(action string) func(context.Context, *cmdEnv, []string) error {
	return func(_ context.Context, env *cmdEnv, args []string) error {
		fs := newFlagSet(env, action, action)
		if err := parseFlags(fs, args, 0); err != nil {
			return err
		}
		// The definition matters only to install; any config will do.
		s, err := newService(loadedConfig{cfg: config.Default(), path: config.DefaultPath()})
		if err != nil {
			return err
		}
		if action == "status" {
			return printServiceStatus(env, s)
		}
		if action == "uninstall" {
			// A running service would keep running, unmanaged, after its
			// definition is gone.
			if st, err := s.Status(); err == nil && st == service.StatusRunning {
				if err := s.Stop(); err != nil {
					return fmt.Errorf("stop service %s before uninstalling: %w", serviceName, err)
				}
			}
		}
		if err := service.Control(s, action); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "%s: %s done\n", serviceName, action)
		return nil
	}
}

func printServiceStatus(env *cmdEnv, s service.Service) error {
	st, err := s.Status()
	if err != nil {
		if errors.Is(err, service.ErrNotInstalled) {
			return fmt.Errorf("service %s is not installed", serviceName)
		}
		return fmt.Errorf("service status: %w", err)
	}
	switch st {
	case service.StatusRunning:
		fmt.Fprintf(env.stdout, "%s: running\n", serviceName)
		return nil
	case service.StatusStopped:
		return fmt.Errorf("service %s is stopped", serviceName)
	default:
		return fmt.Errorf("service %s: status unknown", serviceName)
	}
}

func newService(lc loadedConfig) (service.Service, error) {
	sc, err := serviceConfig(lc.path, lc.cfg)
	if err != nil {
		return nil, err
	}
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
