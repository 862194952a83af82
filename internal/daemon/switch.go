package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/release"
)

// The environment a version started by a switch reads (switch_linux.go,
// switch_windows.go).
const (
	// EnvChild marks a receiptd started by another one (a release on
	// probation, or the installed version under the entry point): its
	// `run` reads no update state at start, the parent does.
	EnvChild = "RECEIPTD_CHILD"
	// EnvProbation marks a release started on probation: it never
	// migrates the database (store.Options.NoMigrate). It takes no update
	// until its parent has recorded it installed: RequestSwitch needs a
	// release staged, and `update apply` refuses during probation.
	EnvProbation = "RECEIPTD_PROBATION"
	// envListenFDs names the listeners passed as files 3, 4, ...
	// ("tcp,unix"), in the order the Daemon binds them.
	envListenFDs = "RECEIPTD_LISTEN_FDS"
	// envHeldFDs says, for each connection passed after the listeners,
	// the index of its listener ("0,0,1"): accepted by the parent and
	// not yet served.
	envHeldFDs = "RECEIPTD_HELD_FDS"
	// envListenAddrs names, on Windows, the addresses the parent
	// listened on and closed ("tcp=127.0.0.1:8080|unix=C:\\...\\r.sock"),
	// which the child binds again: Windows cannot pass a listening
	// socket through CreateProcess.
	envListenAddrs = "RECEIPTD_LISTEN_ADDRS"
	// envLogToParent tells a child that its standard error is its
	// parent's log (Updates.Output): it logs there as JSON, never to
	// log.file, which its parent has open (Windows cannot rotate a file
	// another process holds).
	envLogToParent = "RECEIPTD_LOG_TO_PARENT"
)

// IsChild reports whether this process was started by another receiptd
// (EnvChild).
func IsChild() bool { return os.Getenv(EnvChild) == "1" }

// LogsToParent reports whether this process's standard error is its
// parent's log (envLogToParent): `run` then logs JSON there, whatever
// log.file says.
func LogsToParent() bool { return IsChild() && os.Getenv(envLogToParent) == "1" }

// OnProbation reports whether this process is a release on probation.
func OnProbation() bool { return os.Getenv(EnvProbation) == "1" }

// Updates is what a Supervisor needs to switch to a new version.
type Updates struct {
	// Args start the new executable as this process was started: "run",
	// "-config", the till's file.
	Args []string
	// Output receives the new version's standard output and error; nil:
	// this process's. A Windows service has none to pass on: its
	// logger's Lines (logging.Options) take the child's log instead.
	Output io.Writer
}

// switcher is the Supervisor's part of an update (EnableUpdates).
type switcher struct {
	enabled bool
	args    []string
	out     io.Writer
	asked   chan struct{} // RequestSwitch → updateLoop; one slot
	due     chan struct{} // updateLoop → Run's loop, inside the window
}

// offers is what the OpAMP client takes the head office's releases
// with: nil, so that the till does not say it accepts them, where
// own's update.trusted_keys is empty or the switch is not built.
func (s *Supervisor) offers(own config.Config) *control.Updates {
	if len(own.Update.TrustedKeys) == 0 || !switchSupported {
		return nil
	}
	return &control.Updates{
		Till: release.Till{DataDir: own.DataDir, TrustedKeys: own.Update.TrustedKeys,
			AllowDowngrade: own.Update.AllowDowngrade, Binary: s.version},
		Switch:  s.RequestSwitch,
		Enabled: func() bool { return s.upd.enabled },
	}
}

// EnableUpdates lets s switch to a release staged in the data directory
// (RequestSwitch). Call it before Run.
func (s *Supervisor) EnableUpdates(u Updates) {
	s.upd = switcher{enabled: true, args: u.Args, out: u.Output, asked: make(chan struct{}, 1), due: make(chan struct{})}
}

// RequestSwitch asks Run to switch to the release update.json has staged,
// inside update.window, between sales. It returns at once; its error
// (api.ErrUpdateRefused) says why no switch will happen.
func (s *Supervisor) RequestSwitch() error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", api.ErrUpdateRefused, fmt.Sprintf(format, args...))
	}
	switch {
	case !s.upd.enabled:
		return refuse("this receiptd was not started to take updates")
	case !switchSupported:
		return refuse("the switch to a new version is not built on this platform yet; install the release with the package manager")
	}
	st, err := release.ReadState(s.Config().DataDir)
	if err != nil {
		return err
	}
	if st.Phase != release.Staged || st.Offered == nil {
		return refuse("no release is staged (receiptd update apply FILE); the update is %s", st.Phase)
	}
	select {
	case s.upd.asked <- struct{}{}:
		return nil
	default:
		return refuse("a switch is already asked for")
	}
}

// UpdateStatus is GET /receiptd/update: this process's version and
// update.json.
func (s *Supervisor) UpdateStatus() (any, error) {
	st, err := release.ReadState(s.Config().DataDir)
	if err != nil {
		return nil, err
	}
	return struct {
		Version   string        `json:"version"`
		Probation bool          `json:"onProbation"`
		Update    release.State `json:"update"`
	}{s.version, OnProbation() && st.Phase == release.Probation, st}, nil
}

// runUpdates starts updateLoop when updates are enabled; the channel is
// closed when it has returned.
func (s *Supervisor) runUpdates(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if !s.upd.enabled {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		s.updateLoop(ctx)
	}()
	return done
}

// updateLoop waits for each switch asked for, then for update.window,
// and hands it to Run's loop.
func (s *Supervisor) updateLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.upd.asked:
		}
		wait, err := s.untilWindow(time.Now())
		if err != nil {
			s.log.Error("update.window: switching at once", zap.Error(err))
		}
		if wait > 0 {
			s.log.Info("the switch waits for update.window", zap.Duration("in", wait))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		select {
		case <-ctx.Done():
			return
		case s.upd.due <- struct{}{}:
		}
	}
}

func (s *Supervisor) untilWindow(now time.Time) (time.Duration, error) {
	cfg := s.Config()
	w, err := config.ParseWindow(cfg.Update.Window)
	if err != nil {
		return 0, err
	}
	loc, err := cfg.Accept.Location()
	if err != nil {
		return 0, err
	}
	return w.Next(now.In(loc)), nil
}

// switchRelease is the switch, on Run's loop: cur is stopped as at
// shutdown, the staged release started as a child process on the same
// listeners, and watched through its probation. It returns the instance
// running here afterwards: cur's successor after a rollback; nil when
// the child serves, after it has ended (Run's error then is the child's).
func (s *Supervisor) switchRelease(ctx context.Context, cur *instance) (*instance, error) {
	cfg := s.Config()
	st, err := release.ReadState(cfg.DataDir)
	if err != nil || st.Phase != release.Staged || st.Offered == nil {
		s.log.Warn("switch asked for, but no release is staged", zap.Error(err), zap.String("state", string(st.Phase)))
		return cur, nil
	}
	if !s.claimSwitch() {
		return cur, nil
	}
	log := s.log.With(zap.String("release", st.Offered.Version))
	// Pdeathsig is sent when the thread that started the child ends, not
	// the process (go.dev/issue/27505): this goroutine keeps its thread
	// until the child has ended, and a thread is never ended while a
	// goroutine holds it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st.Enter(release.Switching, "switching to "+st.Offered.Version, time.Now())
	if err := st.Write(cfg.DataDir); err != nil {
		s.release()
		log.Error("switch not started", zap.Error(err))
		return cur, nil
	}
	began := time.Now()
	s.serve(nil, nil)
	// One agent per till: the new version connects to the head office
	// itself, with the same instance UID; a rollback connects this one
	// again.
	s.stopControl()
	if err := cur.stop(); err != nil {
		log.Warn("the previous daemon stopped with an error", zap.Error(err))
	}
	ch, err := s.spawn(st.Offered.Path, s.upd.args, s.upd.out)
	if err != nil {
		return s.rollBack(ctx, cfg, &st, fmt.Sprintf("could not start: %v", err), log)
	}
	if err := s.childReady(ctx, ch, cfg); err != nil {
		ch.stop(cfg.ShutdownTimeout.Duration)
		return s.rollBack(ctx, cfg, &st, err.Error(), log)
	}
	st.Enter(release.Probation, fmt.Sprintf("%s is ready; on probation for %s", st.Offered.Version, cfg.Update.Probation), time.Now())
	s.writeState(cfg, st)
	log.Info("the new version is ready; on probation", zap.Duration("took", time.Since(began)), zap.Stringer("probation", cfg.Update.Probation))
	probation := time.NewTimer(cfg.Update.Probation.Duration)
	defer probation.Stop()
	select {
	case <-ch.exited:
		return s.rollBack(ctx, cfg, &st, "it stopped during its probation: "+ch.describe(), log)
	case <-ctx.Done():
		// Stopped during probation: the release did not pass, and the
		// next start rolls it back (update.json still says probation).
		s.stopped()
		return nil, ch.stop(cfg.ShutdownTimeout.Duration)
	case <-probation.C:
	}
	st.Install(time.Now())
	s.writeState(cfg, st)
	if err := release.Prune(cfg.DataDir, st, cfg.Update.Keep); err != nil {
		log.Warn("old versions not removed", zap.Error(err))
	}
	s.stopped()
	log.Info("installed: the new version passed its probation")
	select {
	case <-ch.exited:
		return nil, ch.exitError()
	case <-ctx.Done():
		return nil, ch.stop(cfg.ShutdownTimeout.Duration)
	}
}

func (s *Supervisor) writeState(cfg config.Config, st release.State) {
	if err := st.Write(cfg.DataDir); err != nil {
		s.log.Error("the update's state not recorded", zap.Error(err), zap.String("state", string(st.Phase)))
	}
}

// claimSwitch marks a switch under way, as claim marks an Apply: an
// Apply meanwhile is ErrSwapInProgress.
func (s *Supervisor) claimSwitch() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != phaseRunning {
		return false
	}
	s.phase = phaseSwapping
	return true
}

// rollBack records why the release did not pass, takes the listeners
// back and starts a Daemon on cfg here again: this process's own code.
func (s *Supervisor) rollBack(ctx context.Context, cfg config.Config, st *release.State, why string, log *zap.Logger) (*instance, error) {
	st.RollBack(why, time.Now())
	s.writeState(cfg, *st)
	log.Error("the new version did not pass; rolling back", zap.String("why", why))
	if err := s.takeBack(); err != nil {
		s.stopped()
		return nil, fmt.Errorf("roll back to the previous version: %w", err)
	}
	d, err := s.build(cfg, s.views())
	if err != nil {
		s.stopped()
		return nil, fmt.Errorf("roll back to the previous version: %w", err)
	}
	in := s.start(ctx, d)
	s.serve(d, nil)
	s.release()
	s.startControl(ctx)
	return in, nil
}

// childReady waits until the child answers /readyz on the listeners it
// took, within control.rollback_after.
func (s *Supervisor) childReady(ctx context.Context, ch *child, cfg config.Config) error {
	deadline := time.NewTimer(s.rollbackAfter)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	probe := readyProbe(s.handoffs[0].addr, cfg.Auth.Token.Reveal())
	var last error
	for {
		if last = probe(ctx); last == nil {
			return nil
		}
		select {
		case <-ch.exited:
			return fmt.Errorf("it stopped at start: %s", ch.describe())
		case <-deadline.C:
			return fmt.Errorf("not ready within control.rollback_after (%s): %v", s.rollbackAfter, last)
		case <-ctx.Done():
			return errors.New("receiptd began to stop before it was ready")
		case <-tick.C:
		}
	}
}

// readyProbe asks GET /readyz over addr, as a POS would connect.
func readyProbe(addr net.Addr, token string) func(context.Context) error {
	network, address := addr.Network(), addr.String()
	if network == "tcp" {
		address = config.Dialable(address)
	}
	c := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, address)
		}}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost/readyz", nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %s", resp.Status)
		}
		return nil
	}
}

// matchListeners checks that lns, taken from a parent at a switch, are
// the ones cfg binds, in the order the Daemon binds them.
func matchListeners(cfg config.Config, lns []net.Listener) error {
	var want, got []string
	if cfg.Listen != "" {
		want = append(want, "tcp")
	}
	if cfg.ListenUnix != "" {
		want = append(want, "unix")
	}
	for _, ln := range lns {
		got = append(got, ln.Addr().Network())
	}
	if strings.Join(want, ",") != strings.Join(got, ",") {
		return fmt.Errorf("the listeners passed (%s) are not the config's (%s)", strings.Join(got, ","), strings.Join(want, ","))
	}
	return nil
}

// childEnv is this process's environment without the variables a switch
// sets, and then with extra. envLogToParent stays: a child given this
// process's standard error logs to the same parent's log.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case EnvChild, EnvProbation, envListenFDs, envHeldFDs, envListenAddrs:
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
