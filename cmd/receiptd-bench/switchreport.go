package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// switchFigures is one round worked out.
type switchFigures struct {
	from, to        time.Time // the switch window: switching until probation, as update.json says
	window          sample    // POS answers overlapping it
	before, all     sample    // answers ended before the offer; every answer of the round
	update          sample    // answers overlapping the offer (or update apply) until INSTALLED reported
	longest         posAttempt
	sales, acked    int
	refused         []posAttempt
	unanswered      []posAttempt // no answer, not refused
	errAnswers      []posAttempt // answered, not 2xx
	resent          int          // attempts Go's transport sent again (nothing written on a kept-alive connection)
	storedOnce      int          // acknowledged queueIds stored exactly once
	missing, double []string     // acknowledged queueIds stored never, or more than once
	notAcked        int          // entries stored whose queueId no answer gave
	twoIDs          []string     // sales acknowledged under two queueIds
}

// figures works out r's figures.
func (r *switchRound) figures() switchFigures {
	var f switchFigures
	switching, okS := r.phase("switching")
	probation, okP := r.phase("probation")
	f.from, f.to = switching.since, probation.since
	if !okS || !okP { // not seen: the whole round is the window
		f.from, f.to = r.t0, r.reported
	}
	ids := map[string]string{} // sale → queueId
	acked := map[string]bool{}
	sales := map[string]bool{}
	for _, a := range r.attempts {
		sales[a.sale] = true
		if a.conns > 1 {
			f.resent++
		}
		switch {
		case a.err != nil && a.refused:
			f.refused = append(f.refused, a)
			continue
		case a.err != nil:
			f.unanswered = append(f.unanswered, a)
			continue
		case a.status != 200 && a.status != 202:
			f.errAnswers = append(f.errAnswers, a)
		default:
			if prev, ok := ids[a.sale]; ok && prev != a.queueID {
				f.twoIDs = append(f.twoIDs, fmt.Sprintf("%s: %s and %s", a.sale, prev, a.queueID))
			}
			ids[a.sale] = a.queueID
			acked[a.queueID] = true
		}
		d := a.end.Sub(a.start)
		f.all = append(f.all, d)
		if d > f.longest.end.Sub(f.longest.start) {
			f.longest = a
		}
		if a.end.Before(r.t0) {
			f.before = append(f.before, d)
		}
		if a.start.Before(f.to) && a.end.After(f.from) {
			f.window = append(f.window, d)
		}
		if a.start.Before(r.reported) && a.end.After(r.t0) {
			f.update = append(f.update, d)
		}
	}
	f.sales, f.acked = len(sales), len(ids)
	f.checkStored(acked, r.entries)
	return f
}

// checkStored counts the acknowledged queueIds stored once, and names
// those stored never or more than once; entries is what the till holds.
func (f *switchFigures) checkStored(acked map[string]bool, entries map[string]int) {
	for id := range acked {
		switch n := entries[id]; {
		case n == 1:
			f.storedOnce++
		case n == 0:
			f.missing = append(f.missing, id)
		default:
			f.double = append(f.double, fmt.Sprintf("%s ×%d", id, n))
		}
	}
	for id := range entries {
		if !acked[id] {
			f.notAcked++
		}
	}
}

// phase returns the first sighting of name in update.json after the
// offer.
func (r *switchRound) phase(name string) (phaseSeen, bool) {
	for _, p := range r.phases {
		if p.phase == name && !p.since.Before(r.t0.Add(-time.Second)) {
			return p, true
		}
	}
	return phaseSeen{}, false
}

// event returns the first report the head office received after the
// offer for which ok holds.
func (r *switchRound) event(ok func(pkgEvent) bool) (pkgEvent, bool) {
	for _, e := range r.events {
		if !e.at.Before(r.t0) && ok(e) {
			return e, true
		}
	}
	return pkgEvent{}, false
}

func (f switchFigures) clean() bool { return len(f.refused)+len(f.unanswered) == 0 }

// answerVerdict: every answer overlapping the switch came within the
// target; none overlapped (a pause between sales longer than the
// switch): not measured.
func (f switchFigures) answerVerdict() string {
	if len(f.window) == 0 {
		return "not measured: no POS request overlapped the switch"
	}
	return verdict(f.window.pct(100) < switchMaxAnswer)
}

// report prints every round and the verdicts over all of them.
func (s switchResult) report() string {
	var b strings.Builder
	if len(s.rounds) == 0 {
		return "A switch to a new version: not measured (the switch is built on Linux only)\n"
	}
	fmt.Fprintf(&b, "A switch to a new version (update.probation %s, %d POS clients: %d on a fresh connection per sale, %d keep-alive; no Prefer, the tax service simulator up):\n",
		switchFlags.probation, switchFlags.clients, (switchFlags.clients+1)/2, switchFlags.clients/2)
	fmt.Fprintf(&b, "%s\n", s.binaries)
	var worst time.Duration
	var bad, rounds, noWindow int
	for _, r := range s.rounds {
		f := r.figures()
		b.WriteString(r.report(f))
		rounds++
		bad += len(f.refused) + len(f.unanswered)
		if len(f.window) == 0 {
			noWindow++
		}
		worst = max(worst, f.window.pct(100))
	}
	fmt.Fprintf(&b, "- over %d switches: connections refused or closed unanswered: %d (target 0) %s\n", rounds, bad, verdict(bad == 0))
	answers := "not measured: no POS request overlapped a switch"
	if noWindow < rounds {
		answers = verdict(worst < switchMaxAnswer)
	}
	fmt.Fprintf(&b, "- over %d switches (%d with a POS request overlapping it): the longest POS answer during a switch: %s (target < %s) %s\n",
		rounds, rounds-noWindow, ms(worst), switchMaxAnswer, answers)
	return b.String()
}

func (r *switchRound) report(f switchFigures) string {
	var b strings.Builder
	at := func(t time.Time) string { return fmt.Sprintf("%+.3fs", t.Sub(f.from).Seconds()) }
	fmt.Fprintf(&b, "\nRound %d, by %s (the till's log: %s, kept with -keep):\n", r.n, r.via, r.logPath)
	if r.failed != "" {
		fmt.Fprintf(&b, "- NOT INSTALLED: %s\n", r.failed)
	}
	fmt.Fprintf(&b, "- %s\n", r.timeline())
	if down, stopped, ok := r.oldStop(); ok {
		fmt.Fprintf(&b, "- the old daemon (its log): \"shutting down\" %s, \"stopped\" %s after update.json said switching\n", at(down), at(stopped))
	}
	fmt.Fprintf(&b, "- head office: %s\n", r.headOfficeLine())
	if r.via == "apply" {
		fmt.Fprintf(&b, "- update apply exited after %s: %q\n", dur(r.applied.Sub(r.t0)), r.applyOut)
	}
	fmt.Fprintf(&b, "- POS: %d sales, %d acknowledged; stored: %d entries (status counts %d), acknowledged and stored once %d, acknowledged and missing %d, stored more than once %d, stored but never acknowledged %d",
		f.sales, f.acked, len(r.entries), r.statusN, f.storedOnce, len(f.missing), len(f.double), f.notAcked)
	if len(f.twoIDs) > 0 {
		fmt.Fprintf(&b, ", acknowledged under two queueIds: %v", f.twoIDs)
	}
	if len(f.missing)+len(f.double) > 0 {
		fmt.Fprintf(&b, " %v %v", f.missing, f.double)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- refused %d, closed unanswered %d (target 0) %s; answered with an error %d; sent again by Go's transport (a kept-alive connection closed before anything was written) %d\n",
		len(f.refused), len(f.unanswered), verdict(f.clean()), len(f.errAnswers), f.resent)
	for _, a := range append(append(append([]posAttempt(nil), f.refused...), f.unanswered...), f.errAnswers...) {
		fmt.Fprintf(&b, "    %s→%s client %d (%s) sale %s retry=%v: %s\n", at(a.start), at(a.end), a.client, a.kind(), a.sale, a.retry, a.describe())
		if !a.retry && a.err != nil {
			for _, x := range r.attempts {
				if x.retry && x.sale == a.sale {
					fmt.Fprintf(&b, "      the same sale again %s→%s: %s\n", at(x.start), at(x.end), x.describe())
				}
			}
		}
	}
	fmt.Fprintf(&b, "- answers overlapping the switch (%s to %s, %d answers): p50 %s, p99 %s, max %s (target < %s) %s\n",
		f.from.Format("15:04:05.000"), f.to.Format("15:04:05.000"), len(f.window), ms(f.window.p50()), ms(f.window.p99()),
		ms(f.window.pct(100)), switchMaxAnswer, f.answerVerdict())
	fmt.Fprintf(&b, "  from the %s to INSTALLED (%d): p50 %s, p99 %s, max %s; before it (%d): p50 %s, p99 %s, max %s;\n",
		r.via, len(f.update), ms(f.update.p50()), ms(f.update.p99()), ms(f.update.pct(100)),
		len(f.before), ms(f.before.p50()), ms(f.before.p99()), ms(f.before.pct(100)))
	fmt.Fprintf(&b, "  the round's longest: %s, %s→%s, client %d (%s)\n",
		ms(f.longest.end.Sub(f.longest.start)), at(f.longest.start), at(f.longest.end), f.longest.client, f.longest.kind())
	return b.String()
}

func (a posAttempt) describe() string {
	how := fmt.Sprintf("request written=%v, kept-alive connection=%v, connections used %d", a.wrote, a.reused, a.conns)
	if a.err != nil {
		return fmt.Sprintf("%v (%s)", a.err, how)
	}
	return fmt.Sprintf("HTTP %d queueId %s replayed=%v (%s)", a.status, a.queueID, a.replayed, how)
}

// timeline is the time from the offer (or update apply) to INSTALLED
// reported, and its parts.
func (r *switchRound) timeline() string {
	var parts []string
	prev, prevName := r.t0, r.via
	for _, name := range []string{"verifying", "staged", "switching", "probation", "installed"} {
		p, ok := r.phase(name)
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s→%s %s", prevName, name, dur(p.since.Sub(prev))))
		prev, prevName = p.since, name
	}
	inst, ok := r.event(func(e pkgEvent) bool { return e.status == "Installed" && e.has == "1.1.0" })
	if !ok {
		return fmt.Sprintf("INSTALLED not reported; update.json: %s", strings.Join(parts, ", "))
	}
	parts = append(parts, fmt.Sprintf("%s→INSTALLED reported %s", prevName, dur(inst.at.Sub(prev))))
	return fmt.Sprintf("%s to INSTALLED at the head office: %s (%s)", r.via, dur(inst.at.Sub(r.t0)), strings.Join(parts, ", "))
}

// headOfficeLine is the till's reports after the offer, each once.
func (r *switchRound) headOfficeLine() string {
	var out []string
	for _, e := range r.events {
		if e.at.Before(r.t0) {
			continue
		}
		s := fmt.Sprintf("%s %s", dur(e.at.Sub(r.t0)), e.status)
		if e.status == "Downloading" {
			s += fmt.Sprintf(" %.0f%%", e.percent)
		}
		s += fmt.Sprintf(" (has %s, answering %s)", e.has, e.version)
		if e.message != "" {
			s += " " + e.message
		}
		out = append(out, s)
	}
	fetched := ""
	if r.via == "offer" {
		fetched = fmt.Sprintf("; the release file fetched with %d request(s)", r.fetches)
	}
	return fmt.Sprintf("%s; %d OpAMP connections, %d instance UID(s)%s", strings.Join(out, "; "), r.connects, r.uids, fetched)
}

func dur(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// oldStop reads, from the till's log, when the daemon that ran before the
// switch logged "shutting down" and "stopped": the first of each after
// the offer.
func (r *switchRound) oldStop() (down, stopped time.Time, ok bool) {
	data, err := os.ReadFile(r.logPath)
	if err != nil {
		return down, stopped, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		var l struct {
			Msg string    `json:"msg"`
			TS  time.Time `json:"ts"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.TS.Before(r.t0) {
			continue
		}
		switch {
		case l.Msg == "shutting down" && down.IsZero():
			down = l.TS
		case l.Msg == "stopped" && stopped.IsZero() && !down.IsZero():
			stopped = l.TS
		}
	}
	return down, stopped, !down.IsZero() && !stopped.IsZero()
}
