package daemon

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/syncer"
)

// NewManaged is NewSupervisor for the till's own config (own, read from
// ownPath; "" when no file was read) with the last applied remote config
// laid over it (control.StartConfig), so a till starts the same while the
// head office is unreachable, and, when [control] is on, the OpAMP client
// that applies the head office's configs through the Supervisor. Should
// the remote config not start (New refuses it), the till starts on its
// own file and the log says why.
func NewManaged(own config.Config, ownPath string, log *zap.Logger, version string) (*Supervisor, error) {
	start, err := control.StartConfig(ownPath, own)
	if err != nil {
		log.Warn("starting without the last remote config", zap.Error(err))
	}
	s := newSupervisor(log, version, own.Control.RollbackAfter.Duration)
	err = s.initManaged(start, own, ownPath)
	if err != nil && start.Hash != "" {
		log.Error("the last remote config does not start; starting on the till's own file", zap.Error(err),
			zap.String("hash", start.Hash))
		err = s.initManaged(config.Merged{Config: own}, own, ownPath)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// initManaged makes the OpAMP client, when [control] is on, then the
// first Daemon from start.
func (s *Supervisor) initManaged(start config.Merged, own config.Config, ownPath string) error {
	s.control = nil
	if start.Config.Control.Enabled() {
		c, err := control.New(control.Options{Start: start, OwnPath: ownPath, Own: &own, Version: s.version,
			Log: s.baseLog, Applier: s, Health: s.health, PosNo: s.posNo, Updates: s.offers(own)})
		if err != nil {
			return err
		}
		s.control = c
	}
	return s.init(start.Config)
}

// Control is the OpAMP client, nil when [control] is off.
func (s *Supervisor) Control() *control.Client { return s.control }

// startControl runs the OpAMP client, when there is one, until ctx ends
// or stopControl. Only Run's goroutine starts and stops it: a switch to
// a new version stops it (the new version runs its own, with the same
// instance UID), a rollback starts it again.
func (s *Supervisor) startControl(ctx context.Context) {
	if s.control == nil || s.ctl.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.ctl.cancel, s.ctl.done = cancel, done
	go func() {
		defer close(done)
		if err := s.control.Run(ctx); err != nil {
			s.log.Error("the head office channel ([control]) could not start; the till runs on without it", zap.Error(err))
		}
	}()
}

// stopControl stops the OpAMP client startControl started, and waits
// for it.
func (s *Supervisor) stopControl() {
	if s.ctl.done == nil {
		return
	}
	s.ctl.cancel()
	<-s.ctl.done
	s.ctl.cancel, s.ctl.done = nil, nil
}

// health is the running Daemon's health for the head office, as
// docs/contract.md "Managing the fleet" defines it: healthy when it runs
// with a writable database, the tax service is up and no unsent-receipt
// alert is raised; its status text is the status page's first line;
// components upstream, queue, posapi, backup and fleet. It reads what the
// status page reads (no disk write), as the client asks every few
// seconds.
func (s *Supervisor) health() control.Health {
	d := s.running()
	if d == nil || !d.running.Load() {
		// Starting, stopping, or between the two daemons of a swap: its
		// database may be closed, so nothing more is read.
		return control.Health{Status: "starting or changing its configuration"}
	}
	h := control.Health{Components: d.components()}
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	line, err := d.api.StatusLine(ctx)
	if err != nil {
		line = "the status page cannot be read: " + err.Error()
	}
	h.Status = line
	h.Healthy = d.running.Load() && d.st.Err() == nil &&
		h.Components["upstream"].Healthy && h.Components["queue"].Healthy
	return h
}

// healthTimeout bounds one reading of the status page for the health.
const healthTimeout = 5 * time.Second

// posNo is PosAPI's posNo as a Daemon last read it, kept across a swap
// so that the head office's description does not lose it meanwhile; ""
// while unknown.
func (s *Supervisor) posNo() string {
	var no string
	if d := s.running(); d != nil {
		if p := d.posapi.Status().PosNo; p != nil {
			no = *p
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if no != "" {
		s.lastPosNo = no
	}
	return s.lastPosNo
}

// running is the Daemon serving now; nil before Run, between the two
// Daemons of a swap, and once Run stops.
func (s *Supervisor) running() *Daemon {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

// fleetBehind is how old the oldest buffered fleet sample may be before
// the push counts as unhealthy.
const fleetBehind = 5 * time.Minute

func (d *Daemon) components() map[string]control.ComponentHealth {
	ok := control.ComponentHealth{Healthy: true, Status: "ok"}
	bad := func(status string) control.ComponentHealth { return control.ComponentHealth{Status: status} }
	out := map[string]control.ComponentHealth{"upstream": ok, "queue": ok, "posapi": ok, "backup": ok}
	ws := d.worker.Status()
	if !ws.Up {
		out["upstream"] = bad("down: " + ws.LastError)
	}
	if ws.Alert != syncer.AlertNone {
		out["queue"] = bad("unsent receipts alert: " + ws.Alert)
	}
	switch ps := d.posapi.Status(); {
	case ps.Need != "":
		out["posapi"] = bad(ps.Need)
	case ps.InfoError != "":
		out["posapi"] = bad(ps.InfoError)
	}
	if bs := d.backups.Status(); bs.LastError != "" {
		out["backup"] = bad(bs.LastError)
	}
	out["fleet"] = control.ComponentHealth{Healthy: true, Status: "off"}
	if fs := d.fleet.Status(); fs.Enabled {
		out["fleet"] = ok
		if !fs.OldestBuffered.IsZero() && time.Since(fs.OldestBuffered) > fleetBehind {
			out["fleet"] = bad("samples waiting since " + fs.OldestBuffered.Format(time.RFC3339))
		}
	}
	return out
}
