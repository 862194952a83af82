package statuspage

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Levels, used as CSS classes and paired with words and a symbol on the
// page so colour is never the only signal.
const (
	levelOK       = "ok"
	levelWarn     = "warn"
	levelCritical = "critical"
	levelQuiet    = "quiet"
)

// stateInfo explains each known state in a shop owner's words, in
// the order of docs/contract.md; attention marks the states a person has to act on.
var stateInfo = []struct {
	state, label string
	attention    bool
}{
	{"queued", "waiting to be sent", false},
	{"sending", "being sent right now", false},
	{"sent", "accepted by the tax service", false},
	{"payment", "payment not settled (PAYMENT); needs a retry once settled", true},
	{"rejected", "refused by the tax service; needs a correction", true},
	{"held", "answer lost; held for an operator to check", true},
	{"cancelled", "cancelled before sending", false},
	{"delete_queued", "deletion waiting to be sent", false},
	{"deleted", "deleted at the tax service", false},
	{"delete_rejected", "deletion refused by the tax service", true},
}

// waitingStates are entries that still have to reach the tax service.
var waitingStates = []string{"queued", "sending", "delete_queued"}

type view struct {
	Refresh   int
	Attention []attentionItem
	Version   string
	Updated   string
	Upstream  upstreamView
	Ageing    ageingView
	Waiting   int
	Needing   int
	Done      int
	Counts    []countRow
	Failures  []failureRow
	Omitted   int
	Cache     []cacheRow
	Offline   *offlineView
	Backup    backupView
	Fleet     *fleetView
	Control   *controlView
	Update    *updateView
	PosAPI    *newsView
	Shared    *sharedView
}

type upstreamView struct {
	Level, Symbol, Headline, Detail string
	LastSuccess                     string
	// Problem is the last error in a person's words (or its raw text when
	// no rule knows it), Raw the text itself and RawAt when it happened.
	// Past marks an error from before the tax service answered again.
	Problem, Raw, RawAt string
	Past                bool
	// Attention: the tax service is out of reach, and its item in Needs
	// attention says why and what to do.
	Attention bool
}

type ageingView struct {
	Level, Symbol, Label, Oldest string
}

type countRow struct {
	State, Label, Level string
	N                   int
}

type failureRow struct {
	At, Ago, QueueID, Kind, State string
	// Message is what a person reads: the tax service's own message for a
	// refused entry, an error in plain words otherwise. Raw is the text
	// behind plain words (empty when Message is the text itself).
	Message, Raw string
	Next         step
	Attempts     int
}

type cacheRow struct {
	Kind, Oldest, LastRefresh, Level, Symbol, Status string
	Entries                                          int
}

func newView(d Data) view {
	v := view{
		Refresh: RefreshSeconds,
		Version: d.Version,
		Updated: clock(d.Now, d.Now),
		Counts:  countRows(d.Counts),
		Waiting: waitingOf(d),
	}
	for _, c := range v.Counts {
		switch {
		case c.Level == levelWarn:
			v.Needing += c.N
		case c.State == "sent" || c.State == "deleted":
			v.Done += c.N
		}
	}
	v.Upstream = upstreamOf(d)
	v.Ageing = ageingOf(d, v.Waiting)
	v.Failures, v.Omitted = failureRows(d)
	v.Attention = attention(d, v.Waiting, v.Failures)
	v.Cache = cacheRows(d)
	v.Offline = offlineOf(d)
	v.Backup = backupOf(d)
	v.Fleet = fleetOf(d)
	v.Control = controlOf(d)
	v.Update = updateOf(d)
	v.PosAPI = posapiNews(d)
	v.Shared = sharedOf(d)
	return v
}

func upstreamOf(d Data) upstreamView {
	u := upstreamView{Level: levelOK, Symbol: "✓", Headline: "Reachable"}
	if d.LastError != "" {
		u.Problem, u.Raw, u.RawAt = plain(d.LastError), d.LastError, ago(d.LastErrorAt, d.Now)
		if u.Problem == "" {
			u.Problem, u.Raw = d.LastError, ""
		}
		// An error is past once the tax service came back or accepted a
		// request after it; with no time recorded, being up is the only
		// evidence.
		u.Past = d.UpstreamUp && (d.LastErrorAt.IsZero() || !d.LastErrorAt.After(d.UpstreamSince) ||
			d.LastSuccess.After(d.LastErrorAt))
	}
	verb := "up"
	if !d.UpstreamUp {
		u.Level, u.Symbol, u.Headline, u.Attention = levelCritical, "✗", "Unreachable", true
		if !outageCritical(d) {
			// The card says what its item in Needs attention says.
			u.Level, u.Symbol = levelWarn, "⚠"
		}
		verb = "down"
	}
	if d.UpstreamSince.IsZero() {
		u.Detail = verb + " (since: unknown)"
	} else {
		u.Detail = fmt.Sprintf("%s for %s (since %s)", verb, human(d.Now.Sub(d.UpstreamSince)), clock(d.UpstreamSince, d.Now))
	}
	if d.LastSuccess.IsZero() {
		u.LastSuccess = "none since receiptd started"
	} else {
		// Said of sending, not selling: a quiet till sends nothing, and
		// "last receipt 2h ago" read as if the shop had stopped selling.
		u.LastSuccess = fmt.Sprintf("%s ago (%s)", human(d.Now.Sub(d.LastSuccess)), clock(d.LastSuccess, d.Now))
	}
	return u
}

func ageingOf(d Data, waiting int) ageingView {
	a := ageingView{Oldest: human(d.OldestUnsentAge)}
	if d.OldestUnsentAge <= 0 && waiting == 0 {
		a.Oldest = "nothing waiting"
	}
	switch d.Alert {
	case AlertNone, "":
		a.Level, a.Symbol, a.Label = levelOK, "✓", "OK"
	case AlertWarn:
		a.Level, a.Symbol = levelWarn, "⚠"
		a.Label = "Warning: older than " + threshold(d.UnsentWarn) + " (alerts.unsent_warn)"
	case AlertCritical:
		a.Level, a.Symbol = levelCritical, "✗"
		a.Label = "Critical: older than " + threshold(d.UnsentCritical) + " (alerts.unsent_critical)"
	default:
		a.Level, a.Symbol, a.Label = levelWarn, "?", fmt.Sprintf("Unknown ageing level %q", d.Alert)
	}
	return a
}

func countRows(counts map[string]int) []countRow {
	rows := make([]countRow, 0, len(stateInfo)+len(counts))
	known := make(map[string]bool, len(stateInfo))
	for _, s := range stateInfo {
		known[s.state] = true
		r := countRow{State: s.state, Label: s.label, N: counts[s.state], Level: levelOK}
		switch {
		case r.N == 0:
			r.Level = levelQuiet
		case s.attention:
			r.Level = levelWarn
		}
		rows = append(rows, r)
	}
	var extra []string
	for s := range counts {
		if !known[s] {
			extra = append(extra, s)
		}
	}
	sort.Strings(extra)
	for _, s := range extra {
		rows = append(rows, countRow{State: s, Label: "(a state this page does not know)", N: counts[s], Level: levelOK})
	}
	return rows
}

func failureRows(d Data) ([]failureRow, int) {
	fs := slices.Clone(d.Failures)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At.After(fs[j].At) })
	omitted := 0
	if len(fs) > MaxFailures {
		omitted = len(fs) - MaxFailures
		fs = fs[:MaxFailures]
	}
	rows := make([]failureRow, 0, len(fs))
	for _, f := range fs {
		r := failureRow{QueueID: f.QueueID, Kind: f.Kind, State: f.State, Message: f.Message, Attempts: f.Attempts, Next: nextStep(f)}
		if words := plain(f.Message); words != "" && !refusedStates[f.State] {
			r.Message, r.Raw = words, f.Message
		}
		if f.At.IsZero() {
			r.At = "unknown time"
		} else {
			r.At, r.Ago = clock(f.At, d.Now), human(d.Now.Sub(f.At))+" ago"
		}
		if strings.TrimSpace(r.Message) == "" {
			r.Message = "(no message)"
		}
		rows = append(rows, r)
	}
	return rows, omitted
}

// refusedStates are the states whose message is the tax service's own
// words, shown as they are.
var refusedStates = map[string]bool{"rejected": true, "payment": true, "delete_rejected": true}

// nextStep is the next step for one failed entry, by its state now.
func nextStep(f Failure) step {
	switch f.State {
	case "held":
		return step{Text: "Check at the tax service first; not there:", Command: "receiptd retry -force " + f.QueueID}
	case "rejected":
		return step{Text: "Correct it in the POS and send it again, or once the cause is fixed:", Command: "receiptd retry " + f.QueueID}
	case "payment":
		return step{Text: "Once the payment is settled:", Command: "receiptd retry " + f.QueueID}
	case "delete_rejected":
		return step{Text: "Correct the cause and delete it again from the POS."}
	case "sent", "deleted":
		return step{Text: "Nothing: it reached the tax service once it answered again."}
	}
	return step{Text: "Nothing: receiptd keeps sending it."}
}

func cacheRows(d Data) []cacheRow {
	rows := make([]cacheRow, 0, len(d.Cache))
	for _, c := range d.Cache {
		r := cacheRow{Kind: c.Kind, Entries: c.Entries, Oldest: "—", Level: levelOK, Symbol: "✓", Status: "OK"}
		if c.Entries > 0 {
			r.Oldest = human(c.OldestAge)
		}
		if c.LastRefresh.IsZero() {
			r.LastRefresh = "never since start"
		} else {
			r.LastRefresh = fmt.Sprintf("%s ago (%s)", human(d.Now.Sub(c.LastRefresh)), clock(c.LastRefresh, d.Now))
		}
		switch {
		case c.LastError != "" && c.Entries > 0:
			r.Level, r.Symbol, r.Status = levelWarn, "⚠", "Last refresh failed (serving stored data): "+c.LastError
		case c.LastError != "":
			r.Level, r.Symbol, r.Status = levelWarn, "⚠", "Last refresh failed (nothing stored to serve): "+c.LastError
		case c.Entries == 0 && d.Offline != nil && len(d.Offline.Kinds) > 0 && !slices.Contains(d.Offline.Kinds, c.Kind):
			r.Level, r.Symbol, r.Status = levelQuiet, "–", "Not needed offline: cached when the POS first asks"
		case c.Entries == 0:
			r.Level, r.Symbol, r.Status = levelQuiet, "–", "Nothing cached yet"
		}
		rows = append(rows, r)
	}
	return rows
}

// human writes a duration for a person, in its two largest units: "45s",
// "5m 12s", "2h 13m", "3d 4h". Negative durations (clock skew) count as 0.
func human(d time.Duration) string {
	if d < time.Second {
		return "less than a second"
	}
	d = d.Truncate(time.Second)
	days, d := d/(24*time.Hour), d%(24*time.Hour)
	hours, d := d/time.Hour, d%time.Hour
	mins, secs := d/time.Minute, (d%time.Minute)/time.Second
	parts := []struct {
		n    time.Duration
		unit string
	}{{days, "d"}, {hours, "h"}, {mins, "m"}, {secs, "s"}}
	for i, p := range parts {
		if p.n == 0 {
			continue
		}
		s := fmt.Sprintf("%d%s", p.n, p.unit)
		if i+1 < len(parts) && parts[i+1].n > 0 {
			s += fmt.Sprintf(" %d%s", parts[i+1].n, parts[i+1].unit)
		}
		return s
	}
	return "less than a second"
}

// threshold writes an ageing threshold the way the config is usually
// written ("24h", "72h"), falling back to human for odd values.
func threshold(d time.Duration) string {
	if d > 0 && d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return human(d)
}

// clock writes t in now's location: the time alone when it is the same
// day, the date too otherwise.
func clock(t, now time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	t = t.In(now.Location())
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05 MST")
	}
	return t.Format("2006-01-02 15:04:05 MST")
}
