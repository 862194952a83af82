package posapi

import (
	"maps"
	"time"
)

// Memory is what a Watcher knows of PosAPI that a Watcher built in its
// place should go on from, when a config is applied in place: the last
// /rest/info read (so the new one does not read it again at once), the
// pace of this till and of PosAPI's, the clock readings, and receiptd's
// own last sendData (which send_every counts from, and /receiptd/status
// shows). The counts of sendData calls are not in it: the metrics carry
// them (metrics.Unwatch). The zero Memory knows nothing.
type Memory struct {
	upstream   string // Config.Upstream of the watcher it came from
	info       infoState
	pace       pace
	wide       wide
	sentMoved  time.Time
	clock      map[string]reading
	last       *SendData
	tried      time.Time
	skewWarned bool
	needWarned string
}

// Memory returns what w knows, for Resume. Call it once w's Run has
// returned; on a nil *Watcher it is the zero Memory.
func (w *Watcher) Memory() Memory {
	if w == nil {
		return Memory{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	m := Memory{upstream: w.cfg.Upstream, info: w.info, pace: w.pace, wide: w.wide, sentMoved: w.sentMoved,
		clock: maps.Clone(w.clock), tried: w.send.tried, skewWarned: w.skewWarned, needWarned: w.needWarned}
	if w.send.last != nil {
		last := *w.send.last
		m.last = &last
	}
	return m
}

// Resume makes w go on from m, before w's Run starts. A Memory of
// another PosAPI (Config.Upstream differs: base_url moved) is not taken:
// what it says is not this one's.
func (w *Watcher) Resume(m Memory) {
	if w == nil || m.upstream == "" || m.upstream != w.cfg.Upstream {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.info, w.pace, w.wide, w.sentMoved = m.info, m.pace, m.wide, m.sentMoved
	if m.clock != nil {
		w.clock = maps.Clone(m.clock)
	}
	w.send.last, w.send.tried = m.last, m.tried
	w.skewWarned, w.needWarned = m.skewWarned, m.needWarned
}
