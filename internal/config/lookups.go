package config

import (
	"fmt"
	"net/url"
	"strings"
)

// The lookup keys and their live defaults, in the order config check names
// them.
var lookupKeys = []struct {
	key  string
	live string
	get  func(*Upstream) *string
}{
	{"upstream.lookup_base_url", "https://api.ebarimt.mn", func(u *Upstream) *string { return &u.LookupBaseURL }},
	{"upstream.stock_base_url", "https://service.itc.gov.mn", func(u *Upstream) *string { return &u.StockBaseURL }},
}

// IsLoopbackURL reports whether raw is a URL whose host is this computer
// (127.0.0.0/8 or ::1; the name localhost is not trusted).
func IsLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Host != "" && isLoopback(u.Hostname())
}

// LiveLookups is the lookup keys (lookup_base_url, stock_base_url) that
// leave this computer while base_url stays on it, each as "key (URL)"; nil
// when base_url is not loopback or no lookup leaves. A real till has PosAPI
// on loopback and the lookup API on the internet, so this is a note for
// config check, not a problem: the mix is only a surprise when base_url is
// `receiptd sim`, which serves the lookups too.
func (u Upstream) LiveLookups() []string {
	var live []string
	for _, l := range u.leaving() {
		live = append(live, l.String())
	}
	return live
}

// leavingLookup is one lookup key that leaves this computer.
type leavingLookup struct {
	key, url string
	atLive   bool // still at its live default
}

func (l leavingLookup) String() string { return fmt.Sprintf("%s (%s)", l.key, l.url) }

// leaving is LiveLookups before it is put in words.
func (u Upstream) leaving() []leavingLookup {
	if !IsLoopbackURL(u.BaseURL) {
		return nil
	}
	var out []leavingLookup
	for _, k := range lookupKeys {
		if v := *k.get(&u); !IsLoopbackURL(v) {
			out = append(out, leavingLookup{key: k.key, url: v, atLive: v == k.live})
		}
	}
	return out
}

// FollowBaseURL points every lookup key at base_url, for a base_url that is
// a simulator serving the lookups too (receiptd demo). It returns a warning
// for each key that was set to another non-loopback address than its live
// default (a mix made on purpose, now overridden), naming the key; a key
// left at its live default follows silently.
func (u *Upstream) FollowBaseURL() []string {
	var warnings []string
	for _, k := range lookupKeys {
		p := k.get(u)
		if *p != k.live && !IsLoopbackURL(*p) && strings.TrimSpace(*p) != "" {
			warnings = append(warnings, fmt.Sprintf("%s = %q is not used: the lookups go to %s, the simulator, so nothing leaves this computer",
				k.key, *p, u.BaseURL))
		}
		*p = u.BaseURL
	}
	return warnings
}

// AtLiveDefault is the lookup keys still at their live defaults
// (lookup_base_url https://api.ebarimt.mn, stock_base_url
// https://service.itc.gov.mn), dotted, in order.
func (u Upstream) AtLiveDefault() []string {
	var keys []string
	for _, k := range lookupKeys {
		if *k.get(&u) == k.live {
			keys = append(keys, k.key)
		}
	}
	return keys
}

// FollowAtLiveDefault points each lookup key still at its live default at
// base_url and returns the keys it moved; a key set to anything else stays.
func (u *Upstream) FollowAtLiveDefault() []string {
	var moved []string
	for _, k := range lookupKeys {
		if p := k.get(u); *p == k.live {
			*p = u.BaseURL
			moved = append(moved, k.key)
		}
	}
	return moved
}

// LookupNote is what config check says about where the lookups go when
// base_url is on this computer but a lookup key is not, one line a string
// (nil when there is nothing to say). A key at its live default follows
// base_url when base_url turns out to be `receiptd sim` at start (a till's
// PosAPI is not, so a till's lookups stay on the internet): a note. A key
// set to another non-loopback address is a mix made on purpose: a warning
// naming it.
func (u Upstream) LookupNote() []string {
	var defaults, mixed []string
	for _, l := range u.leaving() {
		if l.atLive {
			defaults = append(defaults, l.String())
		} else {
			mixed = append(mixed, l.String())
		}
	}
	var lines []string
	if len(defaults) > 0 {
		lines = append(lines,
			fmt.Sprintf("note: upstream.base_url (%s) is on this computer; %s %s at the live default.",
				u.BaseURL, strings.Join(defaults, " and "), pick(len(defaults), "is", "are")),
			"  If base_url answers as receiptd's simulator when receiptd starts (receiptd sim), the lookups follow it and",
			"  nothing leaves this computer; a till's PosAPI does not, so on a till they reach the internet, as they must.")
	}
	if len(mixed) > 0 {
		lines = append(lines,
			fmt.Sprintf("warning: %s %s set to reach the internet while upstream.base_url (%s) is on this computer:",
				strings.Join(mixed, " and "), pick(len(mixed), "is", "are"), u.BaseURL),
			fmt.Sprintf("  receiptd asks %s even when base_url is receiptd's simulator. Remove the %s to let the lookups follow the simulator.",
				pick(len(mixed), "it", "them"), pick(len(mixed), "key", "keys")))
	}
	return lines
}

// pick is one when n is 1, many otherwise.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
