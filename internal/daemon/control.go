package daemon

import (
	"context"
	"sync"

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
// it runs with a writable database, the tax service is up and no unsent
// receipt is old enough for an alert. It reads state only (no disk), as
// the client asks every few seconds.
func (s *Supervisor) health() control.Health {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil || cur.d == nil {
		return control.Health{Status: "starting"}
	}
	d := cur.d
	ws, bs := d.worker.Status(), d.snap.Status()
	h := control.Health{Components: map[string]control.ComponentHealth{
		"upstream": {Healthy: ws.Up, Status: "up"},
		"queue":    {Healthy: ws.Alert == syncer.AlertNone, Status: "unsent receipts alert: " + ws.Alert},
		"backup":   {Healthy: bs.LastError == "", Status: "ok"},
	}}
	if !ws.Up {
		h.Components["upstream"] = control.ComponentHealth{Status: "down: " + ws.LastError}
	}
	if bs.LastError != "" {
		h.Components["backup"] = control.ComponentHealth{Status: bs.LastError}
	}
	h.Status = "ready"
	switch err := d.st.Err(); {
	case !d.running.Load():
		h.Status = "not running"
	case err != nil:
		h.Status = err.Error()
	default:
		h.Healthy = true
		for _, name := range []string{"upstream", "queue", "backup"} {
			if c := h.Components[name]; !c.Healthy && h.Healthy {
				h.Healthy, h.Status = false, "ready; "+name+": "+c.Status
			}
		}
	}
	return h
}
