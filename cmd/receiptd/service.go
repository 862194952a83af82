package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/service"
)

func init() {
	commands["install"] = command{summary: "install receiptd as a system service", run: runInstall}
	for _, a := range []struct{ name, summary string }{
		{"uninstall", "remove the system service"},
		{"start", "start the system service"},
		{"stop", "stop the system service"},
		{"restart", "restart the system service"},
	} {
		commands[a.name] = command{summary: a.summary, run: serviceAction(a.name)}
	}
}

// runInstall registers the service (internal/service). The configuration
// is checked first: a service that cannot start is worse than an install
// that refuses.
func runInstall(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "install", "install [-config FILE]")
	cfgPath := fs.String("config", "", "config file the service reads (default "+config.DefaultPath()+")")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if err := service.CheckInstall(configName(*cfgPath)); err != nil {
		return err
	}
	lc, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if lc.path, err = filepath.Abs(lc.path); err != nil {
		return fmt.Errorf("config path: %w", err)
	}
	return service.Install(env.stdout, lc.definition())
}

// serviceAction runs one service command (service.Manage).
func serviceAction(action string) func(context.Context, *cmdEnv, []string) error {
	return func(_ context.Context, env *cmdEnv, args []string) error {
		fs := newFlagSet(env, action, action)
		if err := parseFlags(fs, args, 0); err != nil {
			return err
		}
		return service.Manage(env.stdout, action)
	}
}

// runAsService runs the daemon under the service manager (service.Run),
// logging as JSON to the journal or a file.
func runAsService(ctx context.Context, lc loadedConfig) error {
	// A Windows service has no standard error to hand a child (the new
	// version a switch starts, or the installed one): its log lines come
	// through this logger's Lines into the same file. systemd gives the
	// child the journal.
	var lines io.Writer
	var childLog *io.Writer
	if runtime.GOOS == "windows" {
		childLog = &lines
	}
	log, level, closeLog, err := newLogger(serviceLog(lc.cfg.Log, runtime.GOOS), true, childLog)
	if err != nil {
		return usageError{err: err}
	}
	defer func() { _ = closeLog() }()
	lc.logSource(log)
	return service.Run(ctx, lc.definition(), log, func(cfg config.Config, log *zap.Logger) (service.Daemon, error) {
		return startServing(cfg, lc.ownPath(), log, level, lines)
	})
}

// serviceLog is the [log] section the service's logger is built from: on
// Windows, log.file defaults to service.DefaultLogFile(). It is the
// logger's alone (it takes and returns the section, never the daemon's
// config): the daemon's config stays as the file says, so a head
// office's fragment, merged over that file, is compared with it like for
// like (a default set in it made every fragment a change).
func serviceLog(l config.Log, goos string) config.Log {
	if goos == "windows" && l.File == "" {
		l.File = service.DefaultLogFile()
	}
	return l
}

// definition is the service's view of lc.
func (lc loadedConfig) definition() service.Definition {
	return service.Definition{Config: lc.cfg, Path: lc.path, Defaulted: lc.defaulted}
}

// configName is the config file a command reads: path, or the default.
func configName(path string) string {
	if path == "" {
		return config.DefaultPath()
	}
	return path
}
