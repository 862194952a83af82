package posapi

import "time"

// paceMinutes is the window of the pace: the last 24 hours, by minute.
const paceMinutes = 24 * 60

// minPaceWindow is the shortest span a pace is taken over: a few sales in
// the first minutes after a start would forecast a run-out far too soon.
const minPaceWindow = time.Hour

// pace counts B2C receipts issued per minute over the last 24 hours in a
// ring of fixed size: memory does not grow with the till's sales.
type pace struct {
	counts [paceMinutes]uint32
	minute [paceMinutes]int64 // the Unix minute each slot counts; stale slots are reused
	start  time.Time          // the first moment counted from (the watcher's start)
}

// add counts n receipts issued at t.
func (p *pace) add(t time.Time, n int) {
	m := t.Unix() / 60
	i := int(((m % paceMinutes) + paceMinutes) % paceMinutes)
	if p.minute[i] != m {
		p.minute[i], p.counts[i] = m, 0
	}
	p.counts[i] += uint32(n)
}

// perHour is the B2C receipts per hour over the last 24 hours up to now,
// or over the time since start when that is shorter (but at least
// minPaceWindow); 0 when none were issued.
func (p *pace) perHour(now time.Time) float64 {
	nowMin := now.Unix() / 60
	var sum uint64
	for i := range p.counts {
		if m := p.minute[i]; m > nowMin-paceMinutes && m <= nowMin {
			sum += uint64(p.counts[i])
		}
	}
	if sum == 0 {
		return 0
	}
	window := min(max(now.Sub(p.start), minPaceWindow), paceMinutes*time.Minute)
	return float64(sum) / window.Hours()
}

// runOut is when left lottery numbers run out at perHour receipts an
// hour from now; false when nothing is being used.
func runOut(now time.Time, left int64, perHour float64) (time.Time, bool) {
	if left <= 0 {
		return now, true
	}
	if perHour <= 0 {
		return time.Time{}, false
	}
	hours := float64(left) / perHour
	if hours > 24*365*10 {
		return time.Time{}, false // beyond any useful forecast
	}
	return now.Add(time.Duration(hours * float64(time.Hour))), true
}
