package statuspage

import (
	"fmt"
	"strings"
	"time"
)

// Offline is the lookup cache's warm-up: whether every list a till needs
// to keep selling offline (district and product tax codes, /rest/info, the
// bank accounts and merchant info of its TINs, the classification's top
// levels) is cached.
type Offline struct {
	Wanted  int       // lookups in the warm set as known now
	Missing []string  // those not cached, as "merchant_info 5317878"
	LastRun time.Time // the last warm-up round; zero: none yet
	// Kinds are the kinds of lookup (the cache table's rows) the warm set
	// holds; the table marks the others as cached on demand.
	Kinds []string
}

// offlineView is the "offline" block of the page; nil when Data.Offline is.
type offlineView struct {
	Ready   bool
	Level   string
	Symbol  string
	Text    string
	Missing string
}

// maxMissingShown bounds the missing lookups named on the page.
const maxMissingShown = 5

func offlineOf(d Data) *offlineView {
	o := d.Offline
	if o == nil {
		return nil
	}
	last := "no warm-up has run yet"
	if !o.LastRun.IsZero() {
		last = "last checked " + ago(o.LastRun, d.Now)
	}
	if len(o.Missing) == 0 && o.Wanted > 0 {
		return &offlineView{Ready: true, Level: levelOK, Symbol: "✓",
			Text: fmt.Sprintf("Ready for an outage: all %s a till needs offline are cached%s, and refreshed in the background (%s).",
				count(o.Wanted, "lookup", "lookups"), kindsWords(o.Kinds), last)}
	}
	shown := o.Missing[:min(len(o.Missing), maxMissingShown)]
	missing := strings.Join(shown, ", ")
	if more := len(o.Missing) - len(shown); more > 0 {
		missing += fmt.Sprintf(" and %d more", more)
	}
	return &offlineView{Level: levelWarn, Symbol: "⚠", Missing: missing,
		Text: fmt.Sprintf("Not ready for an outage yet: %d of %d lookups a till needs offline are not cached; they are fetched while the tax service is reachable (%s).",
			len(o.Missing), o.Wanted, last)}
}

// kindsWords counts and names the warm set's kinds as the table's rows
// do, so the line's numbers are what it lists (13 lookups of 6 kinds,
// not "the 13 lookups" beside 6 names): " (of 3 kinds: branch_info, info
// and bank_accounts, rows of the table below)"; "" when not known.
func kindsWords(kinds []string) string {
	names := ""
	switch len(kinds) {
	case 0:
		return ""
	case 1:
		return " (of 1 kind: " + kinds[0] + ", a row of the table below)"
	default:
		names = strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1]
	}
	return fmt.Sprintf(" (of %d kinds: %s, rows of the table below)", len(kinds), names)
}
