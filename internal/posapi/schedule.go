package posapi

import (
	"context"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"
)

// minReadGap is the shortest time between two of the watcher's own reads
// of /rest/info, however close the forecast run-out.
const minReadGap = 10 * time.Second

// unknownPaceGap is the longest time between reads while the PosAPI-wide
// pace is unknown (the first minute after a start, say): short, so that
// the minute of intervals it needs is had soon even where other tills'
// sendData calls cut some of them.
const unknownPaceGap = minReadGap

// refusedSpread bounds the spread once PosAPI refused a B2C receipt for
// an empty reserve: a sale is waiting at the till then, and every till on
// the PosAPI meets the refusal within moments of the others, so a short
// spread still orders them.
const refusedSpread = 2 * time.Second

// pendingSend is a need seen and waiting out its random spread before
// /rest/info is read again and the need checked once more.
type pendingSend struct {
	due     time.Time
	sentRaw string // lastSentDate when the need was seen
	left    int64  // leftLotteries when the need was seen
}

// forecastLocked is the pace the forecast uses (lotteries an hour) and
// the run-out it gives: this till's own B2C receipts of the last 24 hours
// (as for a till alone on its PosAPI), plus, on a shared PosAPI, what the
// other tills spend (PosAPI's measured fall less this till's share of it),
// counted down from the last read; mu held.
func (w *Watcher) forecastLocked(now time.Time) (float64, time.Time, bool) {
	left, known := w.estLeftLocked()
	if !known {
		return 0, time.Time{}, false
	}
	own := w.pace.perHour(now)
	if others, ok := w.wide.othersPerHour(now); ok && others > 0 && w.wide.shared(now) && !w.info.empty {
		since := max(now.Sub(w.info.at), 0)
		left = max(left-int64(others*since.Hours()), 0)
		at, ok := runOut(now, left, own+others)
		return own + others, at, ok
	}
	at, ok := runOut(now, left, own)
	return own, at, ok
}

// readGapLocked is how long after the last read the next one is due:
// check_every at most; every 10 s while the PosAPI-wide pace is
// unknown; a quarter of the forecast time to run-out, but not under
// minReadGap; minReadGap while reads fail; mu held.
func (w *Watcher) readGapLocked(now time.Time) time.Duration {
	gap := w.cfg.CheckEvery
	if w.info.failing != "" || !w.info.known {
		return min(gap, minReadGap)
	}
	if _, ok := w.wide.perHour(now); !ok {
		return min(gap, unknownPaceGap)
	}
	if _, at, ok := w.forecastLocked(now); ok {
		gap = min(gap, max(at.Sub(now)/4, minReadGap))
	}
	return gap
}

// readDueLocked reports whether /rest/info should be read now; mu held.
func (w *Watcher) readDueLocked(now time.Time) bool {
	if w.recheck {
		return true
	}
	last := w.lastReadLocked()
	return last.IsZero() || now.Sub(last) >= w.readGapLocked(now) || now.Before(last)
}

// lastReadLocked is when /rest/info was last read or tried, whichever is
// later (an answer ObserveInfo was given counts too); mu held.
func (w *Watcher) lastReadLocked() time.Time {
	if w.info.at.After(w.info.tried) {
		return w.info.at
	}
	return w.info.tried
}

// nextWake is how long the watch loop may sleep: until the next read or
// the pending sendData is due, at most maxTick.
func (w *Watcher) nextWake(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := min(w.lastReadLocked().Add(w.readGapLocked(now)).Sub(now), maxTick)
	if w.pending != nil {
		d = min(d, w.pending.due.Sub(now))
	}
	return max(d, 10*time.Millisecond)
}

// maybeSend acts on a due need: at once without a spread, or when this
// till is known to be PosAPI's only client (nothing of a lone till's
// behaviour changes); else it waits a random time in [0, send_spread],
// then reads /rest/info again and calls sendData only if the need still
// holds and nobody else met it meanwhile (lastSentDate unmoved, the
// reserve not refilled).
func (w *Watcher) maybeSend(ctx context.Context) {
	now := w.cfg.Now()
	reason := w.sendDue(now)
	w.mu.Lock()
	if reason == "" || w.cfg.SendSpread <= 0 || w.wide.alone(now) {
		w.pending = nil
		w.mu.Unlock()
		if reason != "" {
			w.sendData(ctx, reason)
		}
		return
	}
	if w.pending == nil {
		spread := w.cfg.SendSpread
		if w.info.empty {
			spread = min(spread, refusedSpread)
		}
		wait := time.Duration(rand.Int64N(int64(spread) + 1))
		w.pending = &pendingSend{due: now.Add(wait), sentRaw: w.info.sentRaw, left: w.info.left}
		w.mu.Unlock()
		w.log.Debug("PosAPI should send its data; waiting a random moment first, in case another till asks",
			zap.String("reason", reason), zap.Duration("wait", wait))
		return
	}
	if now.Before(w.pending.due) {
		w.mu.Unlock()
		return
	}
	p := *w.pending
	w.pending = nil
	w.mu.Unlock()
	w.sendIfStillNeeded(ctx, p)
}

// sendIfStillNeeded reads /rest/info again once p's spread is over and
// calls sendData only if nobody met the need meanwhile (lastSentDate
// unmoved, the reserve not refilled) and it still holds.
func (w *Watcher) sendIfStillNeeded(ctx context.Context, p pendingSend) {
	w.readInfo(ctx)
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	sentRaw := w.info.sentRaw
	met := sentRaw != p.sentRaw || w.info.left > p.left
	w.mu.Unlock()
	if met {
		w.log.Info("PosAPI's data was sent meanwhile (by another till or PosAPI itself): no sendData of ours needed",
			zap.String("lastSentDate", sentRaw))
		return
	}
	if reason := w.sendDue(w.cfg.Now()); reason != "" {
		w.sendData(ctx, reason)
	}
}
