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
			Text: fmt.Sprintf("Ready for an outage: all %d lookups a till needs offline are cached and refreshed in the background (%s).", o.Wanted, last)}
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
