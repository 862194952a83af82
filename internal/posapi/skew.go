package posapi

import (
	"net/http"
	"time"

	"github.com/receiptd/receiptd/internal/client"
)

// Sources of a clock reading.
const (
	SourcePosAPI  = "posapi"  // the Date header of PosAPI's answers
	SourceLookup  = "lookup"  // the Date header of the lookup API's answers
	SourceReceipt = "receipt" // the date of a create answer
)

// maxRoundTrip is the slowest exchange a reading is taken from: the
// service's time falls somewhere within the round trip, and a slow one
// (PosAPI flushing its backlog) says little about its clock.
const maxRoundTrip = 10 * time.Second

// readingTTL is how long a reading counts when no newer one of its
// source comes: a source not asked for a day says nothing of today.
const readingTTL = 6 * time.Hour

// reading is the latest comparison of one source's clock with ours.
type reading struct {
	skew time.Duration // theirs minus ours
	at   time.Time     // ours, when the answer came
}

// sighting is one skew seen in one answer.
type sighting struct {
	source string
	skew   time.Duration
}

// observe turns one exchange's timing into readings: the Date header
// (PosAPI's or the lookup API's, by the operation) and a create answer's
// date.
func observe(t client.Timing) []sighting {
	var out []sighting
	add := func(source string, theirs time.Time, secondRes bool) {
		if d, ok := skewOf(theirs, t.Sent, t.Received, secondRes); ok {
			out = append(out, sighting{source, d})
		}
	}
	if t.Date != "" {
		if theirs, err := http.ParseTime(t.Date); err == nil {
			src := SourcePosAPI
			if t.Op.Lookup() {
				src = SourceLookup
			}
			add(src, theirs, true)
		}
	}
	if t.ReceiptDate != "" {
		if theirs, err := client.ParseTime(t.ReceiptDate); err == nil {
			add(SourceReceipt, theirs, theirs.Nanosecond() == 0)
		}
	}
	return out
}

// skewOf is theirs minus the middle of our round trip, plus half a second
// for a time truncated to the second; false for a round trip too slow (or
// a timing too broken) to tell.
func skewOf(theirs, sent, received time.Time, secondRes bool) (time.Duration, bool) {
	rt := received.Sub(sent)
	if theirs.IsZero() || sent.IsZero() || rt < 0 || rt > maxRoundTrip {
		return 0, false
	}
	if secondRes {
		theirs = theirs.Add(500 * time.Millisecond)
	}
	return theirs.Sub(sent.Add(rt / 2)).Round(time.Second), true
}
