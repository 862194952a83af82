package daemon

import (
	"context"
	"maps"
	"slices"
	"sync"
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
	err = s.initManaged(start, ownPath)
	if err != nil && start.Hash != "" {
		log.Error("the last remote config does not start; starting on the till's own file", zap.Error(err),
			zap.String("hash", start.Hash))
		err = s.initManaged(config.Merged{Config: own}, ownPath)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// initManaged makes the OpAMP client, when [control] is on, then the
// first Daemon from start.
func (s *Supervisor) initManaged(start config.Merged, ownPath string) error {
	s.control = nil
	if start.Config.Control.Enabled() {
		c, err := control.New(control.Options{Start: start, OwnPath: ownPath, Version: s.version,
			Log: s.baseLog, Applier: s, Health: s.health})
		if err != nil {
			return err
		}
		s.control = c
	}
	return s.init(start.Config)
}

// Control is the OpAMP client, nil when [control] is off.
func (s *Supervisor) Control() *control.Client { return s.control }

// runControl runs the OpAMP client, when there is one, until ctx ends;
// the channel is closed when it has stopped.
func (s *Supervisor) runControl(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if s.control == nil {
		close(done)
		return done
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.control.Run(ctx); err != nil {
			s.log.Error("the head office channel ([control]) could not start; the till runs on without it", zap.Error(err))
		}
	}()
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// health is the running Daemon's health for the head office: healthy when
// it runs with a writable database and every component is healthy (the
// tax service up, no unsent-receipt alert, PosAPI's limits met, the last
// snapshot good, the fleet push not behind). It reads state only (no
// disk), as the client asks every few seconds.
func (s *Supervisor) health() control.Health {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil || cur.d == nil {
		return control.Health{Status: "starting"}
	}
	d := cur.d
	h := control.Health{Components: d.components(), Status: "ready"}
	switch err := d.st.Err(); {
	case !d.running.Load():
		h.Status = "not running"
	case err != nil:
		h.Status = err.Error()
	default:
		h.Healthy = true
		for _, name := range slices.Sorted(maps.Keys(h.Components)) {
			if c := h.Components[name]; !c.Healthy && h.Healthy {
				h.Healthy, h.Status = false, "ready; "+name+": "+c.Status
			}
		}
	}
	return h
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
	if fs := d.fleet.Status(); fs.Enabled {
		out["fleet"] = ok
		if !fs.OldestBuffered.IsZero() && time.Since(fs.OldestBuffered) > fleetBehind {
			out["fleet"] = bad("samples waiting since " + fs.OldestBuffered.Format(time.RFC3339))
		}
	}
	return out
}
