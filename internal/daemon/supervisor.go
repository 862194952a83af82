package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/metrics"
)

// ErrNotRunning is Apply's error before Run has started or after it has
// begun to stop.
var ErrNotRunning = errors.New("receiptd is not running")

// DefaultRollbackAfter is how long Apply waits for the new Daemon to be
// ready when NewSupervisor is given zero.
const DefaultRollbackAfter = 60 * time.Second

// readyPoll is how often Apply asks the new Daemon whether it is ready.
const readyPoll = 20 * time.Millisecond

// Supervisor runs a Daemon and swaps it in place for one built from
// another config (Apply), without a service manager: the listeners stay
// bound across the swap (handoff), so a request made meanwhile waits and
// is answered by the new Daemon. The old Daemon is stopped first, as Run
// stops it (requests in flight answered, sends in flight recorded, the
// write-ahead log and the database closed), and only then the new one
// opens the same data directory, so every receipt is in exactly one of
// them and none is lost or doubled.
type Supervisor struct {
	log           *zap.Logger // the Supervisor's own; baseLog is the Daemons'
	baseLog       *zap.Logger
	version       string
	rollbackAfter time.Duration
	handoffs      []*handoff
	control       *control.Client  // nil: [control] is off (NewManaged)
	metrics       *metrics.Metrics // every Daemon's: counters go on across a swap
	sims          *simAnswers      // every Daemon's: base_url is asked once per process

	applyMu sync.Mutex // one Apply at a time; Run waits for it before stopping
	mu      sync.Mutex // guards the fields below
	first   *Daemon    // built by NewSupervisor, started by Run
	cur     *instance
	cfg     config.Config
	runCtx  context.Context // Run's; nil before Run
}

// instance is one Daemon running under a Supervisor.
type instance struct {
	d      *Daemon
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's error, set before done is closed
}

// NewSupervisor builds the first Daemon as New does (every refusal of New
// is its refusal, and it binds the listeners), and starts nothing but the
// goroutines that hand the listeners' connections on. rollbackAfter is how
// long Apply waits for a new Daemon to be ready; zero means
// DefaultRollbackAfter.
func NewSupervisor(cfg config.Config, log *zap.Logger, version string, rollbackAfter time.Duration) (*Supervisor, error) {
	s := newSupervisor(log, version, rollbackAfter)
	if err := s.init(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

func newSupervisor(log *zap.Logger, version string, rollbackAfter time.Duration) *Supervisor {
	if rollbackAfter <= 0 {
		rollbackAfter = DefaultRollbackAfter
	}
	return &Supervisor{log: log.Named("supervisor"), baseLog: log, version: version, rollbackAfter: rollbackAfter,
		metrics: metrics.New(), sims: newSimAnswers()}
}

// init builds the first Daemon, binding the listeners, and keeps them
// in handoffs.
func (s *Supervisor) init(cfg config.Config) error {
	d, err := s.build(cfg, nil)
	if err != nil {
		return err
	}
	s.first, s.cfg = d, cfg
	for _, ln := range d.listeners {
		s.handoffs = append(s.handoffs, newHandoff(ln))
	}
	d.listeners = s.views()
	return nil
}

// build is New for a Daemon of s: on lns (nil: bind them), reporting
// s.control.
func (s *Supervisor) build(cfg config.Config, lns []net.Listener) (*Daemon, error) {
	return build(cfg, s.baseLog, s.version, supervised{listeners: lns, control: s.control, metrics: s.metrics, sims: s.sims})
}

func (s *Supervisor) views() []net.Listener {
	out := make([]net.Listener, len(s.handoffs))
	for i, h := range s.handoffs {
		out[i] = h.view()
	}
	return out
}

// URL is the base URL of the TCP listener ("" without one).
func (s *Supervisor) URL() string {
	for _, h := range s.handoffs {
		if h.ln.Addr().Network() == "tcp" {
			return "http://" + h.ln.Addr().String()
		}
	}
	return ""
}

// DBPath is the database file's path (data_dir never changes in place).
func (s *Supervisor) DBPath() string { return s.first.DBPath() }

// Config is the config of the Daemon running now.
func (s *Supervisor) Config() config.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// Run runs the first Daemon, and whichever Apply puts in its place, until
// ctx ends or the running Daemon stops by itself (a listener failed, or a
// rollback could not start the previous config); it returns that
// Daemon's error after closing the listeners. Run may be called once.
func (s *Supervisor) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s.mu.Lock()
	if s.runCtx != nil {
		s.mu.Unlock()
		return errors.New("supervisor: Run called twice")
	}
	s.runCtx = ctx
	s.cur = s.start(ctx, s.first)
	s.mu.Unlock()
	defer s.closeListeners()
	ctlDone := s.runControl(ctx)
	defer func() { stop(); <-ctlDone }()
	for {
		s.mu.Lock()
		cur := s.cur
		s.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-cur.done:
		}
		s.applyMu.Lock() // an Apply ends soon once ctx has: see waitReady
		s.mu.Lock()
		now := s.cur
		s.mu.Unlock()
		s.applyMu.Unlock()
		if now != cur && ctx.Err() == nil {
			continue // swapped: watch the new one
		}
		stop()
		<-now.done
		return now.err
	}
}

func (s *Supervisor) closeListeners() {
	for _, h := range s.handoffs {
		if err := h.close(); err != nil {
			s.log.Warn("close listener", zap.Stringer("addr", h.ln.Addr()), zap.Error(err))
		}
	}
}

// start runs d in a goroutine until parent ends or the instance is
// stopped.
func (s *Supervisor) start(parent context.Context, d *Daemon) *instance {
	ctx, cancel := context.WithCancel(parent)
	in := &instance{d: d, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		in.err = d.Run(ctx)
	}()
	return in
}

// stop ends in and waits for its Run to return (the database closed).
func (in *instance) stop() error {
	in.cancel()
	<-in.done
	return in.err
}

// Apply replaces the running Daemon with one built from cfg. It returns
// nil once the new Daemon is ready (Ready), or at once when cfg is the
// config in effect. Otherwise the error says why, and the previous config
// runs: cfg changes nothing when Validate refuses it or it moves
// data_dir, listen or listen_unix (only a restart changes them); a new
// Daemon that cannot start, or is not ready within rollbackAfter or
// before ctx ends, is stopped and the previous config started again.
// Should that fail too, Run returns its error. The swap takes as long as
// the old Daemon's shutdown (a send in flight may hold it up to
// shutdown_timeout) and the new one's start.
func (s *Supervisor) Apply(ctx context.Context, cfg config.Config) error {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.mu.Lock()
	runCtx, old, oldCfg := s.runCtx, s.cur, s.cfg
	s.mu.Unlock()
	if runCtx == nil || runCtx.Err() != nil {
		return fmt.Errorf("apply config: %w", ErrNotRunning)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("apply config: %w", err)
	}
	if err := config.RestartChanges(oldCfg, cfg); err != nil {
		return fmt.Errorf("apply config: %w", err)
	}
	if reflect.DeepEqual(oldCfg, cfg) {
		return nil // in effect already: no swap
	}
	began := time.Now()
	if err := old.stop(); err != nil {
		s.log.Warn("the previous daemon stopped with an error", zap.Error(err))
	}
	next, err := s.startReady(ctx, runCtx, cfg)
	if err == nil {
		s.setCurrent(next, cfg)
		s.log.Info("config applied in place", zap.Duration("took", time.Since(began)))
		return nil
	}
	if runCtx.Err() != nil { // shutting down: nothing to roll back to
		s.setCurrent(&instance{done: closedChan()}, oldCfg)
		return fmt.Errorf("apply config: %w", err)
	}
	d, rerr := s.build(oldCfg, s.views())
	if rerr != nil {
		s.setCurrent(&instance{done: closedChan(), err: fmt.Errorf("roll back to the previous config: %w", rerr)}, oldCfg)
		return fmt.Errorf("apply config: %w; and the previous config could not start again: %w", err, rerr)
	}
	s.setCurrent(s.start(runCtx, d), oldCfg)
	s.log.Warn("config not applied; the previous config is back", zap.Error(err), zap.Duration("took", time.Since(began)))
	return fmt.Errorf("apply config: %w", err)
}

func (s *Supervisor) setCurrent(in *instance, cfg config.Config) {
	s.mu.Lock()
	s.cur, s.cfg = in, cfg
	s.mu.Unlock()
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// startReady builds and runs a Daemon from cfg and waits until it is
// ready; when it is not within rollbackAfter, it is stopped and the error
// is the last reason it gave.
func (s *Supervisor) startReady(ctx, runCtx context.Context, cfg config.Config) (*instance, error) {
	d, err := s.build(cfg, s.views())
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	in := s.start(runCtx, d)
	if err := s.waitReady(ctx, runCtx, in); err != nil {
		if serr := in.stop(); serr != nil {
			s.log.Warn("the daemon that was not ready stopped with an error", zap.Error(serr))
		}
		return nil, err
	}
	return in, nil
}

func (s *Supervisor) waitReady(ctx, runCtx context.Context, in *instance) error {
	deadline := time.NewTimer(s.rollbackAfter)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		err := in.d.Ready()
		if err == nil {
			return nil
		}
		select {
		case <-in.done:
			return fmt.Errorf("stopped at start: %w", in.err)
		case <-deadline.C:
			return fmt.Errorf("not ready within control.rollback_after (%s): %w", s.rollbackAfter, err)
		case <-ctx.Done():
			return fmt.Errorf("not ready when the apply was cancelled: %w", err)
		case <-runCtx.Done():
			return fmt.Errorf("shutting down: %w", ErrNotRunning)
		case <-tick.C:
		}
	}
}

// Ready is nil when d serves requests and keeps its promises: Run has
// started every loop, the database file is the one opened and writable,
// and backup.dir, when set, can hold snapshots. Otherwise it says what is
// not ready.
func (d *Daemon) Ready() error {
	if !d.running.Load() {
		return errors.New("not started yet")
	}
	if err := d.st.CheckIdentity(); err != nil {
		return err
	}
	if err := d.st.Err(); err != nil {
		return err
	}
	return d.backups.CheckDir()
}
