package config

import (
	"strings"

	"github.com/receiptd/receiptd/internal/receipt"
)

// checkSkipRules refuses a name in accept.skip_rules that is no rule, or
// a rule receiptd cannot do without, as receipt.NewRules would at start:
// a file or a head office's fragment that names one is refused before it
// is applied. Every bad name is in the one problem of the key.
func (a Accept) checkSkipRules(ch *checker) {
	var bad []string
	for _, name := range a.SkipRules {
		if _, err := receipt.NewRules([]string{name}); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		ch.add("accept.skip_rules", "%s", strings.Join(bad, "; "))
	}
}

// Rules returns the rules receiptd applies at the till: every rule but
// those in SkipRules. Validate has refused a configuration for which it
// fails.
func (a Accept) Rules() (*receipt.Rules, error) { return receipt.NewRules(a.SkipRules) }
