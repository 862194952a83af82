package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/kardianos/service"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
)

// Service identity, the same on every platform.
const (
	serviceName        = "receiptd"
	serviceDisplayName = "receiptd tax receipt queue"
	serviceDescription = "Offline-first tax receipt queue: accepts receipts from POS software on " +
		"localhost, keeps them on disk and sends them to the tax service."
	// serviceUser runs the daemon under systemd.
	serviceUser = "receiptd"
)

// stopMargin is added to shutdown_timeout before Stop gives up waiting.
const stopMargin = 5 * time.Second

// errStopTimeout: the daemon did not end within shutdown_timeout + stopMargin.
var errStopTimeout = errors.New("receiptd did not stop in time")

// serviceConfig is the service definition for a daemon reading cfgPath
// (absolute). dataDir and logFile (may be "") go into the systemd unit's
// ReadWritePaths.
func serviceConfig(cfgPath string, cfg config.Config) (*service.Config, error) {
	sc := &service.Config{
		Name:        serviceName,
		DisplayName: serviceDisplayName,
		Description: serviceDescription,
		Arguments:   []string{"run", "-config", cfgPath},
		Option:      service.KeyValue{},
	}
	switch runtime.GOOS {
	case "windows":
		sc.Option["StartType"] = "automatic"
		sc.Option["DelayedAutoStart"] = true
		sc.Option["OnFailure"] = "restart"
		sc.Option["OnFailureDelayDuration"] = "5s"
		sc.Option["OnFailureResetPeriod"] = 86400 // seconds: count failures per day
	case "linux":
		unit, err := systemdUnit(cfg)
		if err != nil {
			return nil, err
		}
		sc.UserName = serviceUser
		sc.Option["SystemdScript"] = unit
		sc.Option["Restart"] = "always"
	}
	return sc, nil
}

// program is the daemon as the service manager sees it. Start returns once
// the daemon is listening (a refusal is Start's error, so the service
// manager reports the failure); the daemon then serves in a goroutine that
// Stop cancels and waits for.
type program struct {
	cfg     config.Config
	ownPath string // the file cfg was read from; "" for the defaults
	log     *zap.Logger
	slog    service.Logger // Event Log on Windows; nil elsewhere
	// margin is added to shutdown_timeout before Stop gives up; zero means
	// stopMargin.
	margin time.Duration

	mu       sync.Mutex
	cancel   context.CancelFunc
	done     chan struct{} // closed when the serving goroutine ends
	runErr   error         // set before done is closed
	stopping bool
}

var _ service.Interface = (*program)(nil)

func (p *program) Start(service.Service) error {
	d, err := startDaemon(p.cfg, p.ownPath, p.log)
	if err != nil {
		p.event(true, "receiptd failed to start: %v", err)
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.cancel, p.done = cancel, make(chan struct{})
	p.mu.Unlock()
	go p.serveLoop(ctx, d.Run)
	p.event(false, "receiptd started, listening on %s, database %s", d.URL(), d.DBPath())
	return nil
}

// serveLoop runs the daemon until Stop. Should it end by itself, the
// process exits 1 so the service manager's restart policy applies (on
// Windows, recovery actions only follow a process that ends without
// reporting "stopped").
func (p *program) serveLoop(ctx context.Context, run func(context.Context) error) {
	err := run(ctx)
	p.mu.Lock()
	p.runErr = err
	stopping := p.stopping
	close(p.done)
	p.mu.Unlock()
	if !stopping {
		p.event(true, "receiptd stopped unexpectedly: %v", err)
		_ = p.log.Sync()
		if runtime.GOOS == "windows" {
			os.Exit(exitFailure)
		}
	}
}

func (p *program) Stop(service.Service) error {
	p.mu.Lock()
	p.stopping = true
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	limit := p.cfg.ShutdownTimeout.Duration + cmp.Or(p.margin, stopMargin)
	select {
	case <-done:
	case <-time.After(limit):
		p.event(true, "receiptd did not stop within %s", limit)
		return fmt.Errorf("%w (%s)", errStopTimeout, limit)
	}
	p.mu.Lock()
	err := p.runErr
	p.mu.Unlock()
	if err != nil {
		p.event(true, "receiptd stopped with an error: %v", err)
		return err
	}
	p.event(false, "receiptd stopped")
	return nil
}

// event writes to the service logger (the Windows Event Log), when there
// is one; the zap log has its own lines.
func (p *program) event(isErr bool, format string, args ...any) {
	if p.slog == nil {
		return
	}
	if isErr {
		_ = p.slog.Errorf(format, args...)
	} else {
		_ = p.slog.Infof(format, args...)
	}
}

// finished is closed when the daemon ended by itself (nil before Start).
func (p *program) finished() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// runAsService runs the daemon under the service manager: service.Run
// answers the Windows SCM; under systemd it waits for SIGTERM (main's ctx)
// or for the daemon to end by itself.
func runAsService(ctx context.Context, lc loadedConfig) error {
	cfg := lc.cfg
	if runtime.GOOS == "windows" && cfg.Log.File == "" {
		// A Windows service has no standard error to write to.
		cfg.Log.File = filepath.Join(programData(), "receiptd", "logs", "receiptd.log")
	}
	log, closeLog, err := newLogger(cfg, true)
	if err != nil {
		return usageError{err: err}
	}
	defer func() { _ = closeLog() }()
	lc.logSource(log)
	p := &program{cfg: cfg, ownPath: lc.ownPath(), log: log}
	sc, err := serviceConfig(lc.path, cfg)
	if err != nil {
		return err
	}
	sc.Option["RunWait"] = func() {
		select {
		case <-ctx.Done():
		case <-p.finished():
		}
	}
	s, err := service.New(p, sc)
	if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if runtime.GOOS == "windows" {
		if p.slog, err = eventLogger(s); err != nil {
			log.Warn("no Windows Event Log; logging to the file only", zap.Error(err))
			p.slog = nil
		}
	}
	if err := runService(s, p); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	return nil
}

// programData is %ProgramData%, never a relative path.
func programData() string {
	if dir := os.Getenv("ProgramData"); dir != "" && filepath.IsAbs(dir) {
		return dir
	}
	return `C:\ProgramData`
}

// eventLogError records a failure that happens before the service program
// exists (a bad config) in the Windows Event Log, where an administrator
// looks when the service does not start; standard error goes nowhere there.
func eventLogError(err error) {
	if runtime.GOOS != "windows" {
		return
	}
	s, serr := service.New(&program{}, &service.Config{Name: serviceName})
	if serr != nil {
		return
	}
	if l, lerr := eventLogger(s); lerr == nil {
		_ = l.Errorf("receiptd cannot start: %v", err)
	}
}
