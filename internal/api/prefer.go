package api

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// preference is what a request's Prefer headers ask of the wait rule.
type preference struct {
	async   bool          // respond-async
	hasWait bool          // wait=N was given and is a whole number of seconds
	wait    time.Duration // N seconds
}

// parsePrefer reads the Prefer header fields of RFC 7240: comma-separated
// preferences, each a token with an optional "=value" (possibly quoted) and
// optional ";"-separated parameters, which are ignored. Names are compared
// without case. Preferences not understood, or with a value that is not a
// non-negative whole number, are ignored as the RFC asks; the first
// occurrence of a preference wins.
func parsePrefer(fields []string) preference {
	var p preference
	var seenAsync, seenWait bool // only the preferences understood need "first wins"
	for _, field := range fields {
		for rest, more := field, true; more; {
			var pref string
			pref, rest, more = strings.Cut(rest, ",")
			pref, _, _ = strings.Cut(pref, ";")
			name, value, _ := strings.Cut(pref, "=")
			name = strings.TrimSpace(name)
			switch {
			case strings.EqualFold(name, "respond-async") && !seenAsync:
				seenAsync, p.async = true, true
			case strings.EqualFold(name, "wait") && !seenWait:
				seenWait = true
				if d, ok := waitSeconds(strings.Trim(strings.TrimSpace(value), `"`)); ok {
					p.hasWait, p.wait = true, d
				}
			}
		}
	}
	return p
}

// waitSeconds parses the value of wait=N; values too large for a Duration
// saturate (the caller caps them at MaxWait anyway).
func waitSeconds(v string) (time.Duration, bool) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > math.MaxInt64/int64(time.Second) {
		return math.MaxInt64, true
	}
	return time.Duration(n) * time.Second, true
}
