package config

import "strings"

// checkMetricsToken holds auth.metrics_token to the rules of auth.token,
// and apart from it: a scraper's key that equals the receipts' key would
// open the receipts to every scraper.
func (a Auth) checkMetricsToken(ch *checker) {
	checkToken(ch, "auth.metrics_token", a.MetricsToken)
	if a.MetricsToken.IsSet() && a.MetricsToken.Reveal() == a.Token.Reveal() {
		ch.add("auth.metrics_token", "must differ from auth.token: a scraper's key must never open the receipts")
	}
}

// checkToken holds a bearer token, when set, to a length no one guesses
// by hand, without spaces or line breaks. The messages never quote it.
func checkToken(ch *checker, key string, token Secret) {
	t := token.Reveal()
	if t != "" && len(t) < minTokenLen {
		ch.add(key, "must be at least %d characters long", minTokenLen)
	}
	if strings.ContainsAny(t, " \t\r\n") {
		ch.add(key, "must not contain spaces or line breaks")
	}
}
