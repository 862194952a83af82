package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Bound is the safe range of one key, for the till's own file and a head
// office's fragment alike (issue 38): outside it a till stalls, hammers
// PosAPI, fills its disk or issues a sale twice. Validate refuses a value
// outside it naming the key and the bound; the contract's table of safe
// bounds is written from Bounds (TestBoundsTableIsTheContract).
//
// A duration's bounds are time.Durations, a number's are counts, a map's
// bound its number of entries.
type Bound struct {
	Key string
	// Min is the least value; OwnMin, when not zero, is a lower least
	// value the till's own file may set (a demo or a test that wants
	// seconds), while a fragment keeps to Min.
	Min, OwnMin int64
	// Max is the largest value; 0: no upper bound.
	Max int64
	// Why is what the bound protects, for the contract.
	Why string
}

// Bounds is every key's safe range: the one table Validate, Merge and the
// contract read.
var Bounds = []Bound{
	{Key: "max_connections", Min: 1, Max: 4096, Why: "each connection is a file descriptor; Windows and many Linux set-ups allow a few thousand"},
	{Key: "accept.wait", Min: 0, Max: d(5 * time.Minute), Why: "a POS gives up long before; a longer wait only holds its connection"},
	{Key: "accept.max_wait", Min: 0, Max: d(5 * time.Minute), Why: "as accept.wait, for what a request may ask with Prefer: wait=N"},
	{Key: "accept.answer_count", Min: 1, Max: 1_000_000, Why: "answers are held in memory"},
	{Key: "accept.answer_mb", Min: 1, Max: 1024, Why: "answers are held in memory"},
	{Key: "upstream.max_answer", Min: 1, Max: 64, Why: "an upstream answer is read whole into memory (MiB)"},
	{Key: "sync.concurrency", Min: 1, Max: 16, Why: "PosAPI is one process on a till; more at once only queues there"},
	{Key: "sync.min_backoff", Min: d(100 * time.Millisecond), OwnMin: 1, Max: d(time.Minute), Why: "a shorter retry hammers PosAPI while it is down; a longer one leaves a recovered PosAPI idle"},
	{Key: "sync.max_backoff", Min: d(100 * time.Millisecond), OwnMin: 1, Max: d(time.Hour), Why: "receipts wait at most this long after PosAPI is back (and at least sync.min_backoff)"},
	{Key: "sync.max_ambiguous", Min: 1, Max: 10, Why: "each ambiguous attempt may have issued the sale once more"},
	{Key: "alerts.unsent_warn", Min: 1, Max: d(720 * time.Hour), Why: "a threshold past a month never warns while the receipts age"},
	{Key: "alerts.unsent_critical", Min: 1, Max: d(720 * time.Hour), Why: "as alerts.unsent_warn"},
	{Key: "alerts.outage_critical_after", Min: 1, Max: d(720 * time.Hour), Why: "as alerts.unsent_warn, for an outage"},
	{Key: "retention.keep", Min: d(168 * time.Hour), Why: "the idempotency window: a POS retry within 7 days is answered as the sale it repeats, never issued again"},
	{Key: "retention.prune_interval", Min: d(time.Minute), Max: d(24 * time.Hour), Why: "each prune is a write transaction; a day between two keeps the database from growing for long"},
	{Key: "backup.every", Min: d(time.Minute), OwnMin: d(time.Second), Why: "each snapshot is a copy of the whole database; snapshots are named by the second"},
	{Key: "backup.keep", Min: 1, Max: 1000, Why: "each snapshot is a copy of the whole database"},
	{Key: "fleet.interval", Min: d(5 * time.Second), OwnMin: d(time.Second), Max: d(time.Hour), Why: "each sample is pushed and buffered on disk; an hour apart a graph shows nothing"},
	{Key: "fleet.buffer_mb", Min: 1, Max: 4096, Why: "the till's disk holds the receipts first (MiB)"},
	{Key: "fleet.labels", Min: 0, Max: maxFleetLabels, Why: "every label goes into every series pushed; a name is at most 64 bytes, a value at most 256"},
	{Key: "posapi.check_every", Min: d(10 * time.Second), Max: d(24 * time.Hour), Why: "each check reads PosAPI's /rest/info"},
	{Key: "posapi.send_after", Min: 1, Max: d(72 * time.Hour), Why: "a PosAPI days behind on sending stops issuing receipts; past 3 days the ask comes too late"},
	{Key: "posapi.min_lotteries", Min: 0, Max: 1_000_000, Why: "a PosAPI holds tens of thousands at most; more asks for a sendData at every chance"},
	{Key: "posapi.send_every", Min: d(time.Minute), OwnMin: d(time.Second), Max: d(24 * time.Hour), Why: "each sendData makes PosAPI call the tax service; a day apart the reserve runs down"},
	{Key: "posapi.max_clock_skew", Min: d(time.Second), Max: d(time.Hour), Why: "a clock an hour off dates receipts in the wrong hour"},
	{Key: "posapi.send_spread", Min: 0, Max: d(10 * time.Minute), Why: "a need left waiting longer is a reserve left running down"},
	{Key: "posapi.refill_before", Min: d(time.Minute), Max: d(48 * time.Hour), Why: "a forecast further ahead asks for a sendData at every check"},
	{Key: "log.max_size_mb", Min: 1, Why: "the rotated file's size (MiB)"},
	{Key: "log.max_files", Min: 1, Why: "rotated files kept"},
}

// maxFleetLabels bounds fleet.labels; maxLabelName and maxLabelValue
// bound each label (bytes).
const (
	maxFleetLabels = 16
	maxLabelName   = 64
	maxLabelValue  = 256
)

func d(v time.Duration) int64 { return int64(v) }

// shortDuration is d as a file writes it: "168h", "5m", "1h30m", "100ms".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") && len(s) > 3 {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// checkBounds adds a problem for every key of c outside its bound, as the
// till's own file may set it.
func (c Config) checkBounds(ch *checker) {
	for _, b := range Bounds {
		if problem := b.problem(c, false); problem != "" {
			ch.add(b.Key, "%s", problem)
		}
	}
}

// problem says how c's value of b.Key is outside b, or "". fromRemote
// holds a fragment to Min where the own file may go down to OwnMin.
func (b Bound) problem(c Config, fromRemote bool) string {
	v, isDuration := b.value(c)
	lo := b.Min
	if !fromRemote && b.OwnMin != 0 {
		lo = b.OwnMin
	}
	if v >= lo && (b.Max == 0 || v <= b.Max) {
		return ""
	}
	show := func(n int64) string {
		if isDuration {
			return shortDuration(time.Duration(n))
		}
		return strconv.FormatInt(n, 10)
	}
	var s string
	switch {
	case isDuration && lo == 1 && b.Max == 0:
		s = "must be longer than 0"
	case isDuration && lo == 1:
		s = fmt.Sprintf("must be longer than 0 and at most %s", show(b.Max))
	case b.Max == 0:
		s = fmt.Sprintf("must be at least %s", show(lo))
	case lo == 0 && v >= 0:
		s = fmt.Sprintf("must be at most %s", show(b.Max))
	default:
		s = fmt.Sprintf("must be at least %s and at most %s", show(lo), show(b.Max))
	}
	if b.Key == "fleet.labels" {
		return fmt.Sprintf("%s labels, not %d", s, v)
	}
	s += ", not " + show(v)
	switch {
	case !fromRemote || b.OwnMin == 0 || v < b.OwnMin:
	case isDuration && b.OwnMin == 1:
		s += " (when set remotely; the till's own file may go lower)"
	default:
		s += fmt.Sprintf(" (when set remotely; the till's own file may set down to %s)", show(b.OwnMin))
	}
	return s
}

// value reads b.Key of c: a Duration's nanoseconds, an int, or a map's
// length; isDuration says which.
func (b Bound) value(c Config) (v int64, isDuration bool) {
	for _, f := range keyFields {
		if f.key != b.Key {
			continue
		}
		fv := reflect.ValueOf(c).FieldByIndex(f.index)
		switch {
		case fv.Type() == reflect.TypeFor[Duration]():
			return int64(fv.Interface().(Duration).Duration), true
		case fv.Kind() == reflect.Map:
			return int64(fv.Len()), false
		default:
			return fv.Int(), false
		}
	}
	panic("config: a bound of an unknown key " + b.Key) // TestEveryBoundIsAKey
}

// BoundsTable is Bounds as the contract's Markdown table.
func BoundsTable() string {
	var b strings.Builder
	b.WriteString("| key | safe bound | own file may go down to | why |\n|---|---|---|---|\n")
	for _, bd := range Bounds {
		_, isDuration := bd.value(Default())
		show := func(n int64) string {
			if isDuration {
				return shortDuration(time.Duration(n))
			}
			return strconv.FormatInt(n, 10)
		}
		var r string
		switch {
		case isDuration && bd.Min == 1:
			r = "more than 0"
		default:
			r = "at least " + show(bd.Min)
		}
		if bd.Max != 0 {
			r += ", at most " + show(bd.Max)
		}
		if bd.Key == "fleet.labels" {
			r = fmt.Sprintf("at most %d labels", bd.Max)
		}
		own := ""
		if bd.OwnMin != 0 {
			own = show(bd.OwnMin)
			if isDuration && bd.OwnMin == 1 {
				own = "more than 0"
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", bd.Key, r, own, bd.Why)
	}
	return b.String()
}
