package posapi

import "time"

// PosAPI serves several tills at once (the vendor's manual, §1.1: one
// instance "can be used by several parties"), so its reserve falls with
// every till's sales, not only this one's. What every till can see alike
// is /rest/info: the pace here is the fall of leftLotteries between two
// reads over the time between them, all of PosAPI's clients together.

// wideRing bounds the intervals kept: at one read every 10 s (the
// fastest) it holds the last ten minutes; at check_every's 10m, ten hours.
const wideRing = 64

// wideWindow is the span the PosAPI-wide pace is taken over: the
// intervals that ended within it.
const wideWindow = time.Hour

// maxIntervalReads: an interval longer than this many check_every is
// not a measure of the pace now (a long outage of PosAPI, or the wall
// clock stepped forward) and is cut out.
const maxIntervalReads = 3

// sharedFor is how long a PosAPI stays "shared" after other POS software
// was last seen spending its reserve.
const sharedFor = 24 * time.Hour

// minOthers is the fewest lotteries other software must have spent in the
// window (and at least a tenth of the fall) before the PosAPI is called
// shared: a read can fall between PosAPI issuing this till's receipt and
// the till hearing of it, which moves a count or two between intervals.
const minOthers = 3

// maxPacePerSecond is the fastest fall of the reserve taken for sales:
// 100 lotteries a second is 6,000 sales a minute on one PosAPI, far
// beyond a chain's (300 tills at one sale a minute each spend 5 a second).
const maxPacePerSecond = 100

// interval is the fall of the reserve between two reads with no refill
// between them.
type interval struct {
	end     time.Time     // the later read
	elapsed time.Duration // since the earlier read
	fell    int64         // leftLotteries fell by this much
	own     int64         // this till's B2C receipts issued in between
}

// lastRead is what one good read of /rest/info said.
type lastRead struct {
	ok      bool
	left    int64
	sentRaw string
	posID   string
	at      time.Time
}

// wide is the PosAPI-wide pace: the intervals between reads in a ring of
// fixed size, and when other software was last seen spending.
type wide struct {
	ring     [wideRing]interval
	next, n  int
	prev     lastRead
	othersAt time.Time // zero: never
}

// change is what a read says happened since the one before.
type change struct {
	sentMoved bool // lastSentDate changed: somebody's sendData
	restarted bool // posId changed: another PosAPI, or the same one set up again
	refilled  bool // the reserve rose
	cut       bool // the interval does not count towards the pace
}

// observe takes one good read at `at`; own is this till's B2C receipts
// since the previous one; maxGap is the longest interval that counts.
func (p *wide) observe(cur lastRead, own int64, maxGap time.Duration) change {
	prev := p.prev
	p.prev = cur
	if !prev.ok {
		return change{cut: true}
	}
	ch := change{
		sentMoved: cur.sentRaw != prev.sentRaw,
		restarted: cur.posID != "" && prev.posID != "" && cur.posID != prev.posID,
		refilled:  cur.left > prev.left,
	}
	elapsed := cur.at.Sub(prev.at)
	fell := prev.left - cur.left
	// A sendData (or a restart) between the reads refilled the reserve
	// somewhere in the interval: its fall says nothing of the pace. A
	// clock stepped back gives no interval at all, one stepped forward an
	// interval too long to count. A fall faster than any sales is a
	// reserve set by hand (or another PosAPI behind the same address).
	ch.cut = ch.sentMoved || ch.restarted || ch.refilled || elapsed <= 0 || elapsed > maxGap ||
		float64(fell) > maxPacePerSecond*elapsed.Seconds()
	if ch.cut {
		return ch
	}
	p.ring[p.next] = interval{end: cur.at, elapsed: elapsed, fell: fell, own: own}
	p.next = (p.next + 1) % wideRing
	p.n = min(p.n+1, wideRing)
	if fell, own, _, ok := p.sums(cur.at); ok {
		if others := fell - own; others >= minOthers && others*10 >= fell {
			p.othersAt = cur.at
		}
	}
	return ch
}

// minWideSpan is the least time PosAPI must have been watched (the
// intervals of the window together) before its pace is known: two reads
// moments apart (the lookup cache's and the watcher's at a start) would
// otherwise call a busy PosAPI quiet, or a fleet of fresh tills each
// PosAPI's only client.
const minWideSpan = time.Minute

// sums adds up the intervals that ended within wideWindow before now (and
// not after it: the clock may have stepped back since); false while they
// span less than minWideSpan.
func (p *wide) sums(now time.Time) (fell, own int64, elapsed time.Duration, ok bool) {
	for i := range p.n {
		iv := p.ring[i]
		if iv.end.After(now) || now.Sub(iv.end) > wideWindow {
			continue
		}
		fell, own, elapsed = fell+iv.fell, own+iv.own, elapsed+iv.elapsed
		ok = true
	}
	return fell, own, elapsed, ok && elapsed >= minWideSpan
}

// perHour is the lotteries PosAPI issued an hour, all clients together;
// false while no interval of the window is known.
func (p *wide) perHour(now time.Time) (float64, bool) {
	fell, _, elapsed, ok := p.sums(now)
	if !ok {
		return 0, false
	}
	return float64(fell) / elapsed.Hours(), true
}

// othersPerHour is the lotteries an hour PosAPI issued to other software
// (its fall less this till's receipts); false while no interval is known.
func (p *wide) othersPerHour(now time.Time) (float64, bool) {
	fell, own, elapsed, ok := p.sums(now)
	if !ok {
		return 0, false
	}
	return float64(max(fell-own, 0)) / elapsed.Hours(), true
}

// ownShare is the share (0 to 1) of the PosAPI-wide fall that was this
// till's; false while nothing fell.
func (p *wide) ownShare(now time.Time) (float64, bool) {
	fell, own, _, ok := p.sums(now)
	if !ok || fell <= 0 {
		return 0, false
	}
	return min(max(float64(own)/float64(fell), 0), 1), true
}

// alone reports whether this till is known to be PosAPI's only client:
// its pace measured, and no other software seen spending within sharedFor.
func (p *wide) alone(now time.Time) bool {
	_, known := p.perHour(now)
	return known && !p.shared(now)
}

// shared reports whether other software spent the reserve within
// sharedFor.
func (p *wide) shared(now time.Time) bool {
	return !p.othersAt.IsZero() && now.Sub(p.othersAt) < sharedFor && !p.othersAt.After(now.Add(wideWindow))
}
