package syncer

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Ageing alert levels, as /receiptd/status reports them.
const (
	AlertNone     = "none"
	AlertWarn     = "warn"
	AlertCritical = "critical"
)

// AlertLevel is the ageing level of an oldest unsent entry of the given age.
func AlertLevel(age, warn, critical time.Duration) string {
	switch {
	case age >= critical:
		return AlertCritical
	case age >= warn:
		return AlertWarn
	default:
		return AlertNone
	}
}

// alertState is the level of the last ageing check, kept to log only its
// crossings; guarded by Worker.mu.
type alertState struct {
	level string
}

// Status is what the worker knows of the upstream and the queue's ageing.
type Status struct {
	Up          bool
	Since       time.Time // when Up last changed (or the worker started)
	LastSuccess time.Time // zero if nothing was accepted since start
	LastError   string    // the last failure's text, if any
	LastErrorAt time.Time // when LastError happened (zero: no error since start)
	Alert       string    // AlertNone, AlertWarn or AlertCritical at the last check
}

// Slots is how many entries the worker sends at once (Config.Concurrency).
func (w *Worker) Slots() int { return w.cfg.Concurrency }

// Status returns a snapshot of the worker's view.
func (w *Worker) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	level := w.alert.level
	if level == "" {
		level = AlertNone
	}
	return Status{
		Up: !w.link.down, Since: w.link.since, LastSuccess: w.link.lastSuccess,
		LastError: w.link.lastError, LastErrorAt: w.link.lastErrorAt, Alert: level,
	}
}

// alertLoop checks the oldest unsent entry's age and expires held results
// until ctx ends.
func (w *Worker) alertLoop(ctx context.Context) {
	t := time.NewTicker(w.cfg.AlertInterval)
	defer t.Stop()
	w.checkAge()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.checkAge()
			w.answers.expire()
		}
	}
}

// sighting is the oldest unsent entry as the worker first saw it; guarded
// by Worker.mu.
type sighting struct {
	acceptedAt time.Time     // its acceptance time as stored (wall clock)
	wallAge    time.Duration // its age by the wall clock when first seen
	seen       time.Time     // when first seen, on the steady clock (Clock.Steady)
}

// UnsentAge is the age of the oldest unsent entry, accepted at acceptedAt
// (queue.OldestUnsent): its wall-clock age when the worker first saw it as
// the oldest (the ageing check runs every Config.AlertInterval, and every
// status read asks too), plus the time since then on the steady clock
// (Clock.Steady).
// A wall clock set back or forward after that changes neither the age nor
// the alerts: a till's clock corrected by hours neither silences an alert
// nor raises a false one. Before the first sighting, and after a restart,
// the wall clock is all there is.
func (w *Worker) UnsentAge(acceptedAt time.Time) time.Duration {
	now, wall := w.now(), w.wall()
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &w.oldest
	if s.seen.IsZero() || !s.acceptedAt.Equal(acceptedAt) {
		*s = sighting{acceptedAt: acceptedAt, wallAge: max(wall.Sub(acceptedAt), 0), seen: now}
	}
	return s.wallAge + now.Sub(s.seen)
}

// checkAge logs once per crossing of an ageing threshold, not every tick.
func (w *Worker) checkAge() {
	oldest, ok, err := w.q.OldestUnsent()
	if err != nil {
		w.log.Error("read oldest unsent entry", zap.Error(err))
		return
	}
	var age time.Duration
	if ok {
		age = w.UnsentAge(oldest)
	}
	level := AlertLevel(age, w.cfg.UnsentWarn, w.cfg.UnsentCritical)
	w.mu.Lock()
	prev := w.alert.level
	w.alert = alertState{level: level}
	w.mu.Unlock()
	w.m.SetAlertLevel(level)
	if level == prev || (prev == "" && level == AlertNone) {
		return
	}
	switch level {
	case AlertCritical:
		w.log.Error("oldest unsent receipt is past the critical age: check the connection to the tax service",
			zap.Duration("age", age), zap.Duration("critical", w.cfg.UnsentCritical))
	case AlertWarn:
		w.log.Warn("oldest unsent receipt is past the warning age",
			zap.Duration("age", age), zap.Duration("warn", w.cfg.UnsentWarn))
	default:
		w.log.Info("unsent receipts are no longer ageing", zap.Duration("age", age))
	}
}
