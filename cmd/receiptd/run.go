package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/datadir"
	"github.com/receiptd/receiptd/internal/logging"
	"github.com/receiptd/receiptd/internal/service"
	"github.com/receiptd/receiptd/internal/store"
)

func init() {
	commands["run"] = command{summary: "run the daemon in the foreground (or under the service manager)", run: runRun}
}

func runRun(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "run", "run [-config FILE] [-init]")
	cfgPath := fs.String("config", "", "config file (default "+config.DefaultPath()+")")
	initDB := fs.Bool("init", false, "create a new, empty database when the data directory's is missing or empty\n"+
		"(receipts acknowledged into a lost database are then never sent)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	lc, err := loadConfig(*cfgPath)
	if err == nil && *initDB {
		err = datadir.Init(lc.cfg.DataDir)
	}
	if service.Managed() {
		if err != nil {
			service.ReportStartFailure(err)
			return err
		}
		return runAsService(ctx, lc)
	}
	if err != nil {
		return err
	}
	logCfg := lc.cfg.Log
	if daemon.LogsToParent() { // a Windows service's child: its parent writes the file
		logCfg.File, logCfg.Format = "", "json"
	}
	log, level, closeLog, err := newLogger(logCfg, false, nil)
	if err != nil {
		return usageError{err: err}
	}
	defer func() { _ = closeLog() }()
	lc.logSource(log)
	return runDaemon(ctx, lc.cfg, lc.ownPath(), log, level)
}

// loadedConfig is a configuration and where it came from.
type loadedConfig struct {
	cfg  config.Config
	path string // the file read, or the default path that was missing
	// defaulted: no file at the default path, so the defaults apply.
	defaulted bool
}

// ownPath is the file the config was read from, "" when the defaults
// apply: a remote config is laid over it (daemon.NewManaged).
func (lc loadedConfig) ownPath() string {
	if lc.defaulted {
		return ""
	}
	return lc.path
}

// logSource says which configuration is in force, so an operator reading
// the log knows whether their file was read at all.
func (lc loadedConfig) logSource(log *zap.Logger) {
	if lc.defaulted {
		log.Info("no config file at the default path; using the defaults", zap.String("path", lc.path))
		return
	}
	log.Info("config loaded", zap.String("path", lc.path))
}

// loadConfig loads path, or config.DefaultPath() when path is "". Only a
// file missing at the default path falls back to the defaults; every other
// problem (a missing explicit file, a bad key) is a usageError, exit 2.
func loadConfig(path string) (loadedConfig, error) {
	explicit := path != ""
	if !explicit {
		path = config.DefaultPath()
	}
	cfg, err := config.Load(path)
	switch {
	case err == nil:
		return loadedConfig{cfg: cfg, path: path}, nil
	case !explicit && errors.Is(err, fs.ErrNotExist):
		cfg, err = config.Load("")
		if err != nil { // an environment override made the defaults invalid
			return loadedConfig{}, usageError{err: err}
		}
		return loadedConfig{cfg: cfg, path: path, defaulted: true}, nil
	case errors.Is(err, fs.ErrNotExist):
		return loadedConfig{}, usagef("config file %s does not exist", path)
	default:
		return loadedConfig{}, usageError{err: err}
	}
}

// newLogger builds the logger log.* asks for, and its level, which the
// daemon changes in place (Supervisor.FollowLogLevel: log.level of a
// remote config). Format "auto" is console output when standard error is
// a terminal and no log file is set, JSON otherwise; asService forces
// JSON (the journal or a file reads it). lines, when not nil, is set to
// a writer of whole lines into the log (logging.Options.Lines).
func newLogger(cfg config.Log, asService bool, lines *io.Writer) (*zap.Logger, zap.AtomicLevel, func() error, error) {
	console := false
	switch cfg.Format {
	case "console":
		console = true
	case "auto":
		console = !asService && cfg.File == "" && isTerminal(os.Stderr)
	}
	level := zap.NewAtomicLevel()
	log, closeLog, err := logging.New(logging.Options{
		Level: cfg.Level, File: cfg.File,
		MaxSizeMB: cfg.MaxSizeMB, MaxFiles: cfg.MaxFiles, Console: console, Atom: &level, Lines: lines,
	})
	if err != nil {
		return nil, level, nil, fmt.Errorf("log: %w", err)
	}
	return log, level, closeLog, nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// startDaemon is daemon.NewManaged (daemon.New under a supervisor that
// applies the head office's configs in place, [control]; ownPath is the
// till's own file, "" for none) with its refusals classified: a configuration
// the daemon refuses is a usageError (exit 2), anything else exit 1. A
// damaged database's refusal also names the way back that keeps the most:
// salvage, which reads what the file and its log still hold.
func startDaemon(cfg config.Config, ownPath string, log *zap.Logger) (*daemon.Supervisor, error) {
	d, err := daemon.NewManaged(cfg, ownPath, log, version)
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, config.ErrInvalid):
		return nil, usageError{err: err}
	case errors.Is(err, store.ErrCorrupt):
		return nil, fmt.Errorf("start: %w\n%s", err, salvageHint)
	}
	return nil, fmt.Errorf("start: %w", err)
}

// salvageHint follows the refusal of a damaged database (which names the
// file and its first damaged page): the next step first.
const salvageHint = "Next step: `receiptd salvage` reads what the damaged file and its write-ahead log still hold " +
	"into a new database and keeps the damaged file (docs/operations.md, \"My database is damaged\"); the " +
	"receipts not yet sent may be only there. A snapshot or backup goes back with `receiptd restore FILE`."

// runDaemon starts the daemon, its log.level followed by level, and
// serves until ctx ends.
func runDaemon(ctx context.Context, cfg config.Config, ownPath string, log *zap.Logger, level zap.AtomicLevel) error {
	d, err := startServing(cfg, ownPath, log, level, nil)
	if err != nil {
		return err
	}
	if err := d.Run(ctx); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}
