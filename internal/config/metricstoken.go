package config

import "strings"

// checkMetricsToken holds auth.metrics_token to the rules of auth.token,
// and apart from it: a scraper's key that equals the receipts' key would
// open the receipts to every scraper.
func (a Auth) checkMetricsToken(ch *checker) {
	t := a.MetricsToken
	if t == "" {
		return
	}
	if len(t) < minTokenLen {
		ch.add("auth.metrics_token", "must be at least %d characters long", minTokenLen)
	}
	if strings.ContainsAny(t, " \t\r\n") {
		ch.add("auth.metrics_token", "must not contain spaces or line breaks")
	}
	if t == a.Token {
		ch.add("auth.metrics_token", "must differ from auth.token: a scraper's key must never open the receipts")
	}
}
