// Package service owns receiptd as a system service: the service
// definition (a hardened systemd unit on Linux, an automatic, restarting
// service on Windows), install and uninstall, start, stop, restart and
// status through the system's own service manager (systemctl and
// journalctl, or the Windows SCM through kardianos/service), the folder
// permissions install sets, the program a service manager runs, and the
// client of a running daemon's local API that the operator commands and
// `receiptd status` read it through (apiclient.go).
//
// It promises the truth about the service: a command says whether it is
// not installed, stopped, running or failed, and a failed start comes with
// the daemon's own reason from the journal or the log. Install refuses
// rather than overwrite a service, or write one that runs as root.
package service

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

	kservice "github.com/kardianos/service"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
)

// Service identity, the same on every platform.
const (
	// Name is the service's name for the service manager (systemd unit
	// receiptd.service, Windows service receiptd).
	Name               = "receiptd"
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
func serviceConfig(cfgPath string, cfg config.Config) (*kservice.Config, error) {
	sc := &kservice.Config{
		Name:        Name,
		DisplayName: serviceDisplayName,
		Description: serviceDescription,
		Arguments:   []string{"run", "-config", cfgPath},
		Option:      kservice.KeyValue{},
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
	cfg   config.Config
	log   *zap.Logger
	start StartFunc
	slog  kservice.Logger // Event Log on Windows; nil elsewhere
	// margin is added to shutdown_timeout before Stop gives up; zero means
	// stopMargin.
	margin time.Duration

	mu       sync.Mutex
	cancel   context.CancelFunc
	done     chan struct{} // closed when the serving goroutine ends
	runErr   error         // set before done is closed
	stopping bool
}

var _ kservice.Interface = (*program)(nil)

func (p *program) Start(kservice.Service) error {
	d, err := p.start(p.cfg, p.log)
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
			os.Exit(1)
		}
	}
}

func (p *program) Stop(kservice.Service) error {
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

// Daemon is the running daemon as the service program drives it.
type Daemon interface {
	// Run serves until ctx ends.
	Run(ctx context.Context) error
	URL() string
	DBPath() string
}

// StartFunc starts the daemon for cfg: it returns once the daemon
// listens, or with its refusal.
type StartFunc func(cfg config.Config, log *zap.Logger) (Daemon, error)

// Managed reports whether a service manager started this process (systemd
// without a terminal, or the Windows SCM), so `run` serves through Run.
func Managed() bool { return !kservice.Interactive() || startedBySCM() }

// DefaultLogFile is where the daemon logs on Windows when log.file is
// unset: a Windows service has no standard error to write to.
func DefaultLogFile() string { return filepath.Join(programData(), "receiptd", "logs", "receiptd.log") }

// Run runs the daemon under the service manager until it stops it:
// kservice.Run answers the Windows SCM; under systemd it waits for
// SIGTERM (ctx) or for the daemon to end by itself. def is the
// configuration being served (with log.file already settled), log its
// logger.
func Run(ctx context.Context, def Definition, log *zap.Logger, start StartFunc) error {
	p := &program{cfg: def.Config, log: log, start: start}
	sc, err := serviceConfig(def.Path, def.Config)
	if err != nil {
		return err
	}
	sc.Option["RunWait"] = func() {
		select {
		case <-ctx.Done():
		case <-p.finished():
		}
	}
	s, err := kservice.New(p, sc)
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

// ReportStartFailure records a failure that happens before the service program
// exists (a bad config) in the Windows Event Log, where an administrator
// looks when the service does not start; standard error goes nowhere there.
func ReportStartFailure(err error) {
	if runtime.GOOS != "windows" {
		return
	}
	s, serr := kservice.New(&program{}, &kservice.Config{Name: Name})
	if serr != nil {
		return
	}
	if l, lerr := eventLogger(s); lerr == nil {
		_ = l.Errorf("receiptd cannot start: %v", err)
	}
}
