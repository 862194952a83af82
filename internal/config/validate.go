package config

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// minTokenLen keeps a bearer token from being guessable by hand.
const minTokenLen = 16

// checker collects KeyErrors.
type checker struct{ errs []error }

func (c *checker) add(key, format string, args ...any) {
	c.errs = append(c.errs, &KeyError{Key: key, Problem: fmt.Sprintf(format, args...)})
}

// sortByField orders the problems as Config's fields are (Validate
// checks the bounds last), each key's problems in the order found.
func (c *checker) sortByField() {
	order := func(err error) int {
		key := err.(*KeyError).Key
		for i, f := range keyFields {
			if !f.table && (f.under(key) || strings.HasPrefix(key, f.key+"[")) {
				return i
			}
		}
		return len(keyFields)
	}
	slices.SortStableFunc(c.errs, func(a, b error) int { return order(a) - order(b) })
}

func (c *checker) positive(key string, d Duration) {
	if d.Duration <= 0 {
		c.add(key, "must be longer than 0")
	}
}

func (c *checker) nonNegative(key string, d Duration) {
	if d.Duration < 0 {
		c.add(key, "must not be negative")
	}
}

func (c *checker) oneOf(key, value string, allowed ...string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	c.add(key, "must be one of %s, not %q", strings.Join(allowed, ", "), value)
}

// Validate checks every value and returns all problems found, each a
// *KeyError naming its key, joined; nil when the configuration is usable.
// It reads the file system only to check that ca_file exists.
func (c Config) Validate() error {
	var ch checker
	c.checkListen(&ch)
	if c.DataDir == "" || !filepath.IsAbs(c.DataDir) {
		ch.add("data_dir", "must be an absolute path, not %q", c.DataDir)
	}
	ch.positive("shutdown_timeout", c.ShutdownTimeout)
	c.Accept.check(&ch)
	c.Upstream.check(&ch, c.Listen)
	c.Sync.check(&ch)
	c.Cache.check(&ch)
	if c.Alerts.UnsentWarn.Duration > c.Alerts.UnsentCritical.Duration {
		ch.add("alerts.unsent_warn", "must not be longer than alerts.unsent_critical (%s)", c.Alerts.UnsentCritical)
	}
	c.Backup.check(&ch, c.DataDir)
	c.Fleet.check(&ch)
	c.Control.check(&ch)
	c.Update.check(&ch)
	c.Auth.check(&ch)
	c.Log.check(&ch)
	c.checkBounds(&ch)
	ch.sortByField()
	return errors.Join(ch.errs...)
}

func (c Config) checkListen(ch *checker) {
	if c.Listen == "" {
		if c.ListenUnix == "" {
			ch.add("listen", "must be set when listen_unix is empty")
		}
		return
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		ch.add("listen", "must be host:port, like \"127.0.0.1:7080\": %v", err)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		ch.add("listen", "port %q must be a number from 0 to 65535", port)
	}
	if !namesLoopback(host) && !c.Auth.Token.IsSet() {
		ch.add("listen", "%q is not a loopback address: set auth.token (or %s) to listen on it", c.Listen, EnvAuthToken)
	}
}

// isLoopback reports whether host is an address of this machine written
// as one: 127.0.0.0/8 or ::1. The name "localhost" is not trusted (a
// hosts file or a resolver may send it elsewhere): write 127.0.0.1. An
// empty host or 0.0.0.0 means every interface, which is not loopback.
func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// namesLoopback is isLoopback, or the name "localhost": where taking a
// name for this machine only widens a refusal (a base_url that is our
// own listen address) or the address is bound by receiptd itself (listen).
func namesLoopback(host string) bool {
	return strings.EqualFold(host, "localhost") || isLoopback(host)
}

func (a Accept) check(ch *checker) {
	if a.MaxWait.Duration < a.Wait.Duration {
		ch.add("accept.max_wait", "must not be shorter than accept.wait (%s)", a.Wait)
	}
	if a.Timezone == "" {
		ch.add("accept.timezone", `must be an IANA time zone like "Asia/Ulaanbaatar", or "Local"`)
	} else if _, err := a.Location(); err != nil {
		ch.add("accept.timezone", `unknown time zone %q; use an IANA name like "Asia/Ulaanbaatar", or "Local"`, a.Timezone)
	}
	ch.oneOf("accept.queued_answer", a.QueuedAnswer, QueuedAnswer202, QueuedAnswerError)
	ch.positive("accept.answer_ttl", a.AnswerTTL)
	a.checkSkipRules(ch)
}

func (u Upstream) check(ch *checker, listen string) {
	if base, ok := checkURL(ch, "upstream.base_url", u.BaseURL, "http", "https"); ok && listen != "" {
		if sameAddr(base, listen) {
			ch.add("upstream.base_url", "%q is receiptd's own listen address; point it at PosAPI", u.BaseURL)
		}
	}
	checkURL(ch, "upstream.lookup_base_url", u.LookupBaseURL, "http", "https")
	checkURL(ch, "upstream.stock_base_url", u.StockBaseURL, "http", "https")
	u.Paths.check(ch)
	ch.positive("upstream.timeout", u.Timeout)
	checkHeaders(ch, "upstream.headers", u.Headers)
	checkHeaders(ch, "upstream.lookup_headers", u.LookupHeaders)
	checkTransport(ch, "upstream", u.CAFile, u.Proxy)
}

// checkTransport is the one check of a section's ca_file and proxy
// ([upstream], [fleet], [control]): a CA file that can be read, and a
// proxy URL of http, https or socks5; each empty is not set.
func checkTransport(ch *checker, section, caFile, proxy string) {
	if caFile != "" {
		if err := checkCAFile(caFile); err != nil {
			ch.add(section+".ca_file", "%s %v", caProblem, err)
		}
	}
	if proxy != "" {
		checkURL(ch, section+".proxy", proxy, "http", "https", "socks5")
	}
}

// checkCAFile is nil when file holds a PEM certificate, as the transport
// that loads it needs.
func checkCAFile(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			return fmt.Errorf("%s holds no PEM certificate", file)
		}
		if block.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(block.Bytes); err == nil {
				return nil
			}
		}
	}
}

// checkURL applies URLProblem to one key, adding its problem to ch; it
// returns the parsed URL when there is none.
func checkURL(ch *checker, key, raw string, schemes ...string) (*url.URL, bool) {
	u, problem := URLProblem(raw, schemes...)
	if problem != "" {
		ch.add(key, "%s", problem)
		return nil, false
	}
	return u, true
}

// sameAddr reports whether the URL points at the listen address.
func sameAddr(u *url.URL, listen string) bool {
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	norm := func(h string) string {
		if namesLoopback(h) {
			return "loopback"
		}
		return strings.ToLower(h)
	}
	return port == lport && norm(u.Hostname()) == norm(lhost)
}

func (p Paths) check(ch *checker) {
	for _, kv := range []struct{ key, v string }{
		{"create_receipt", p.CreateReceipt}, {"delete_receipt", p.DeleteReceipt}, {"info", p.Info},
		{"send_data", p.SendData}, {"bank_accounts", p.BankAccounts}, {"branch_info", p.BranchInfo},
		{"product_tax_code", p.ProductTaxCode}, {"merchant_info", p.MerchantInfo},
		{"tin_info", p.TinInfo}, {"classification", p.Classification},
		{"stock_qr", p.StockQr}, {"save_opr_merchants", p.SaveOprMerchants},
	} {
		key, v := kv.key, kv.v
		if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, "?# \t\r\n") {
			ch.add("upstream.paths."+key, "must be a path starting with \"/\", without query or spaces, not %q", v)
		}
	}
}

func checkHeaders(ch *checker, key string, headers map[string]Secret) {
	seen := make(map[string]string, len(headers))
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		value := headers[name]
		if other, dup := seen[strings.ToLower(name)]; dup {
			ch.add(key+"."+name, "is set twice (as %q too); header names ignore case", other)
		}
		seen[strings.ToLower(name)] = name
		if !isToken(name) {
			ch.add(key+"."+name, "is not a valid HTTP header name")
		}
		if strings.ContainsAny(value.Reveal(), "\r\n\x00") {
			ch.add(key+"."+name, "value must not contain line breaks or NUL")
		}
	}
}

// isToken reports whether s is an RFC 9110 token (a header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		ok := r < 0x7f && r > 0x20 && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
		if !ok {
			return false
		}
	}
	return true
}

func (s Sync) check(ch *checker) {
	if s.MaxBackoff.Duration < s.MinBackoff.Duration {
		ch.add("sync.max_backoff", "must not be shorter than sync.min_backoff (%s)", s.MinBackoff)
	}
	ch.oneOf("sync.on_ambiguous", s.OnAmbiguous, OnAmbiguousRetry, OnAmbiguousHold)
}

func (c Cache) check(ch *checker) {
	r := c.Refresh
	for _, kd := range []struct {
		key string
		d   Duration
	}{
		{"branch_info", r.BranchInfo}, {"product_tax_code", r.ProductTaxCode},
		{"merchant_info", r.MerchantInfo}, {"tin_info", r.TinInfo}, {"info", r.Info},
		{"bank_accounts", r.BankAccounts}, {"classification", r.Classification},
		{"stock_qr", r.StockQr},
	} {
		key, d := kd.key, kd.d
		if d.Duration < time.Second {
			ch.add("cache.refresh."+key, "must be at least 1s, not %s", d)
		}
	}
	// Negative answers are always cached (they shield the tax service from a
	// till that keeps asking about an unknown TIN), so zero is refused
	// rather than read as "not kept".
	ch.positive("cache.negative_ttl", c.NegativeTTL)
	ch.nonNegative("cache.max_stale", c.MaxStale)
	if c.MaxEntries < 1 {
		ch.add("cache.max_entries", "must be at least 1, not %d", c.MaxEntries)
	}
}

func (a Auth) check(ch *checker) {
	checkToken(ch, "auth.token", a.Token)
	a.checkMetricsToken(ch)
	for i, h := range a.AllowedHosts {
		if h == "" || strings.ContainsAny(h, "/ \t@") || strings.Contains(h, "://") {
			ch.add(fmt.Sprintf("auth.allowed_hosts[%d]", i), "must be a host name like \"till-7.shop.lan\", not %q", h)
		}
	}
}

func (l Log) check(ch *checker) {
	ch.oneOf("log.level", l.Level, "debug", "info", "warn", "error")
	ch.oneOf("log.format", l.Format, "auto", "json", "console")
}
