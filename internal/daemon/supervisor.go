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
	"github.com/receiptd/receiptd/internal/logging"
	"github.com/receiptd/receiptd/internal/metrics"
)

// Apply's errors besides the config's own and a swap's.
var (
	// ErrNotRunning is Apply's error before Run has started, once Run has
	// begun to stop (its context ended, the running Daemon stopped by
	// itself, or a rollback could not start the previous config again),
	// and after Run has returned: no Daemon starts again. Apply changed
	// nothing, except for a swap that Run's end cut short: its new
	// Daemon was stopped too.
	ErrNotRunning = errors.New("receiptd is not running")
	// ErrSwapInProgress is Apply's error while another Apply is under
	// way; it changed nothing. Apply refuses rather than waits, as a swap
	// may take a minute or more (shutdown_timeout, then rollback_after);
	// apply again once the other has returned.
	ErrSwapInProgress = errors.New("another configuration is being applied")
)

// DefaultRollbackAfter is how long Apply waits for the new Daemon to be
// ready when NewSupervisor is given zero.
const DefaultRollbackAfter = 60 * time.Second

// readyPoll is how often Apply asks the new Daemon whether it is ready.
const readyPoll = 20 * time.Millisecond

// Supervisor runs a Daemon and swaps it in place for one built from
// another config (Apply), without a service manager; the package doc
// says how. Run's goroutine is the only one that starts or stops a
// Daemon: Apply checks the config, then hands the swap to it and waits
// for the answer. Everything else reads the fields under mu, which no one
// holds across a wait, so a status read never waits for a swap.
type Supervisor struct {
	log           *zap.Logger // the Supervisor's own; baseLog is the Daemons'
	baseLog       *zap.Logger
	version       string
	rollbackAfter time.Duration
	handoffs      []*handoff
	control       *control.Client // nil: [control] is off (NewManaged)
	ctl           struct {        // the running control client (startControl); Run's goroutine only
		cancel context.CancelFunc
		done   chan struct{}
	}
	metrics *metrics.Metrics // every Daemon's: counters go on across a swap
	sims    *simAnswers      // every Daemon's: base_url is asked once per process
	dbPath  string           // data_dir never changes in place
	upd     switcher         // the switch to a new version (switch.go); off unless EnableUpdates

	swaps chan swapRequest // from Apply to Run's loop
	// carried is what the last Daemon to stop knew (Daemon.carry), for
	// the next one built; only Run's goroutine uses it.
	carried *carried
	// level, when set (FollowLogLevel), is the logger's level, which each
	// config in effect sets (log.level); nil: it is fixed.
	level *zap.AtomicLevel

	mu        sync.Mutex // guards the fields below, and is never held across a wait
	phase     phase
	first     *Daemon         // built by NewSupervisor; Run takes it (nil after)
	live      *Daemon         // the Daemon serving now; nil when none does
	cfg       config.Config   // the config in effect
	runCtx    context.Context // Run's; nil before Run
	lastPosNo string          // PosAPI's posNo as a Daemon last read it
}

// phase is where a Supervisor is in its life: "no Daemon runs" is a
// phase, never an instance without one.
type phase int

const (
	phaseBuilt    phase = iota // NewSupervisor built the first Daemon; Run has not started it
	phaseRunning               // Run's loop runs a Daemon
	phaseSwapping              // an Apply is under way: another gets ErrSwapInProgress
	phaseStopped               // Run is stopping or has returned: Apply gets ErrNotRunning
)

// instance is one Daemon running under a Supervisor. Only start makes
// one, so every instance has its cancel and its done.
type instance struct {
	d      *Daemon
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's error, set before done is closed
}

// swapRequest is one Apply handed to Run's loop.
type swapRequest struct {
	ctx   context.Context // Apply's: its end ends the wait for the new Daemon
	cfg   config.Config
	old   config.Config // the config in effect, to roll back to
	reply chan error    // buffered: the loop never waits for Apply
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
		metrics: metrics.New(), sims: newSimAnswers(), swaps: make(chan swapRequest)}
}

// init builds the first Daemon, binding the listeners, and keeps them
// in handoffs.
func (s *Supervisor) init(cfg config.Config) error {
	inh, err := inherit(cfg) // the listeners a parent passed at a switch
	if err != nil {
		return err
	}
	var lns []net.Listener
	if inh != nil {
		lns = inh.listeners
	}
	d, err := s.build(cfg, lns)
	if err != nil {
		return err
	}
	s.first, s.cfg, s.dbPath = d, cfg, d.DBPath()
	for i, ln := range d.listeners {
		h := newHandoff(ln)
		if inh != nil {
			h.seed(inh.held[i])
		}
		s.handoffs = append(s.handoffs, h)
	}
	d.listeners = s.views()
	return nil
}

// build is New for a Daemon of s: on lns (nil: bind them), reporting
// s.control.
func (s *Supervisor) build(cfg config.Config, lns []net.Listener) (*Daemon, error) {
	return build(cfg, s.baseLog, s.version, supervised{listeners: lns, control: s.control, metrics: s.metrics, sims: s.sims,
		carried: s.carried, updater: s, noMigrate: OnProbation()})
}

func (s *Supervisor) views() []net.Listener {
	out := make([]net.Listener, len(s.handoffs))
	for i, h := range s.handoffs {
		out[i] = h.view()
	}
	return out
}

// FollowLogLevel makes level follow log.level of the config in effect:
// at once, and at each config applied in place (the logger is built once,
// from the till's own file, before the last remote config is laid over
// it). level is the logger's own (logging.Options.Atom). Call it before
// Run.
func (s *Supervisor) FollowLogLevel(level zap.AtomicLevel) {
	s.level = &level
	s.setLevel(s.Config().Log.Level)
}

// setLevel sets the followed level to lvl (Validate has checked it).
func (s *Supervisor) setLevel(lvl string) {
	if s.level == nil {
		return
	}
	if err := logging.SetLevel(*s.level, lvl); err != nil {
		s.log.Warn("log.level not applied", zap.Error(err))
	}
}

// URL is the base URL of the TCP listener ("" without one).
func (s *Supervisor) URL() string {
	for _, h := range s.handoffs {
		if h.addr.Network() == "tcp" {
			return "http://" + h.addr.String()
		}
	}
	return ""
}

// DBPath is the database file's path.
func (s *Supervisor) DBPath() string { return s.dbPath }

// Config is the config in effect: during a swap, the previous one until
// the new Daemon is ready.
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
	first, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer s.closeListeners()
	s.startControl(ctx)
	defer func() { stop(); s.stopControl() }()
	updDone := s.runUpdates(ctx)
	defer func() { stop(); <-updDone }()
	return s.loop(ctx, s.start(ctx, first))
}

// begin moves s from phaseBuilt to phaseRunning and hands Run the first
// Daemon, which s then no longer holds.
func (s *Supervisor) begin(ctx context.Context) (*Daemon, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != phaseBuilt {
		return nil, errors.New("supervisor: Run called twice")
	}
	d := s.first
	s.first, s.live, s.phase, s.runCtx = nil, d, phaseRunning, ctx
	return d, nil
}

// loop runs cur until ctx ends or cur stops by itself, doing the swaps
// Apply hands it one at a time, and returns Run's error.
func (s *Supervisor) loop(ctx context.Context, cur *instance) error {
	for {
		select {
		case <-ctx.Done():
			s.stopped()
			return cur.stop()
		case <-cur.done:
			s.stopped()
			return cur.err
		case req := <-s.swaps:
			next, err := s.swap(ctx, cur, req)
			if next == nil {
				return err
			}
			cur = next
		case <-s.upd.due: // a new version, inside update.window (switch.go)
			next, err := s.switchRelease(ctx, cur)
			if next == nil {
				return err
			}
			cur = next
		}
	}
}

func (s *Supervisor) closeListeners() {
	for _, h := range s.handoffs {
		if err := h.close(); err != nil {
			s.log.Warn("close listener", zap.Stringer("addr", h.addr), zap.Error(err))
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
// data_dir, listen or listen_unix (only a restart changes them), nor
// while another Apply is under way (ErrSwapInProgress) or Run is not
// running (ErrNotRunning); a new Daemon that cannot start, or is not
// ready within rollbackAfter or before ctx ends, is stopped and the
// previous config started again. Should that fail too, the error says
// so, Run returns, and every later Apply is ErrNotRunning; should Run's
// context end meanwhile, the error is ErrNotRunning. The swap takes as
// long as the old Daemon's shutdown (a send in flight may hold it up to
// shutdown_timeout) and the new one's start.
func (s *Supervisor) Apply(ctx context.Context, cfg config.Config) error {
	oldCfg, runCtx, err := s.claim()
	if err != nil {
		return fmt.Errorf("apply config: %w", err)
	}
	defer s.release()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("apply config: %w", err)
	}
	if err := config.RestartChanges(oldCfg, cfg); err != nil {
		return fmt.Errorf("apply config: %w", err)
	}
	if reflect.DeepEqual(oldCfg, cfg) {
		return nil // in effect already: no swap
	}
	req := swapRequest{ctx: ctx, cfg: cfg, old: oldCfg, reply: make(chan error, 1)}
	select {
	case s.swaps <- req:
		return <-req.reply // the loop answers every request it takes
	case <-runCtx.Done(): // Run is stopping, or its loop has returned: no swap
		return fmt.Errorf("apply config: %w", ErrNotRunning)
	}
}

// claim makes the caller the one Apply under way and returns the config
// in effect and Run's context.
func (s *Supervisor) claim() (config.Config, context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	running := (s.phase == phaseRunning || s.phase == phaseSwapping) && s.runCtx.Err() == nil
	switch {
	case !running:
		return config.Config{}, nil, ErrNotRunning
	case s.phase == phaseSwapping:
		return config.Config{}, nil, ErrSwapInProgress
	}
	s.phase = phaseSwapping
	return s.cfg, s.runCtx, nil
}

// release ends claim's, unless Run has begun to stop meanwhile.
func (s *Supervisor) release() {
	s.mu.Lock()
	if s.phase == phaseSwapping {
		s.phase = phaseRunning
	}
	s.mu.Unlock()
}

// stopped marks that Run is stopping: no Daemon serves, none starts again.
func (s *Supervisor) stopped() {
	s.mu.Lock()
	s.phase, s.live = phaseStopped, nil
	s.mu.Unlock()
}

// serve records d as the Daemon serving now (nil: none), and cfg, when
// not nil, as the config in effect.
func (s *Supervisor) serve(d *Daemon, cfg *config.Config) {
	s.mu.Lock()
	s.live = d
	if cfg != nil {
		s.cfg = *cfg
	}
	s.mu.Unlock()
}

// swap stops cur, starts a Daemon on req.cfg and waits for it to be
// ready, or else starts one on req.old again, and answers req. It returns
// the instance running now; nil when none is, with Run's error: nil when
// ctx ended, or why the previous config could not start again.
func (s *Supervisor) swap(ctx context.Context, cur *instance, req swapRequest) (*instance, error) {
	if ctx.Err() != nil { // taken as Run began to stop
		s.stopped()
		req.reply <- fmt.Errorf("apply config: %w", ErrNotRunning)
		return nil, cur.stop()
	}
	began := time.Now()
	s.serve(nil, nil)
	if err := cur.stop(); err != nil {
		s.log.Warn("the previous daemon stopped with an error", zap.Error(err))
	}
	s.carried = cur.d.carry()
	next, err := s.startReady(req.ctx, ctx, req.cfg)
	if err == nil {
		s.serve(next.d, &req.cfg)
		s.setLevel(req.cfg.Log.Level)
		req.reply <- nil
		s.log.Info("config applied in place", zap.Duration("took", time.Since(began)))
		return next, nil
	}
	if ctx.Err() != nil { // stopping: nothing to roll back to
		s.stopped()
		req.reply <- fmt.Errorf("apply config: %w: %w", ErrNotRunning, err)
		return nil, nil
	}
	d, rerr := s.build(req.old, s.views())
	if rerr != nil {
		s.stopped()
		req.reply <- fmt.Errorf("apply config: %w; and the previous config could not start again: %w", err, rerr)
		return nil, fmt.Errorf("roll back to the previous config: %w", rerr)
	}
	back := s.start(ctx, d)
	s.serve(back.d, nil)
	req.reply <- fmt.Errorf("apply config: %w", err)
	s.log.Warn("config not applied; the previous config is back", zap.Error(err), zap.Duration("took", time.Since(began)))
	return back, nil
}

// startReady builds and runs a Daemon from cfg and waits until it is
// ready; when it is not within rollbackAfter, it is stopped and the error
// is the last reason it gave.
func (s *Supervisor) startReady(ctx, runCtx context.Context, cfg config.Config) (*instance, error) {
	if runCtx.Err() != nil {
		return nil, errors.New("stopping before the new daemon was built")
	}
	d, err := s.build(cfg, s.views())
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	in := s.start(runCtx, d)
	if err := s.waitReady(ctx, runCtx, in); err != nil {
		if serr := in.stop(); serr != nil {
			s.log.Warn("the daemon that was not ready stopped with an error", zap.Error(serr))
		}
		s.carried = in.d.carry()
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
			return fmt.Errorf("not ready when receiptd began to stop: %w", err)
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
