package statuspage

import "regexp"

// plainErrors turn the error texts receiptd records (Go's network errors,
// the client's classes, the store's) into a person's words; the first match
// wins. The page always keeps the raw text beside them, behind a details
// element, for whoever has to dig further.
var plainErrors = []struct {
	match *regexp.Regexp
	words string
}{
	{regexp.MustCompile(`(?i)disk full`), "The disk is full: the database cannot grow."},
	{regexp.MustCompile(`(?i)moved, deleted or replaced`), "The database file was moved, deleted or replaced while receiptd had it open."},
	{regexp.MustCompile(`(?i)write failed earlier`), "A write to the database failed (an I/O error or a failed flush to disk)."},
	{regexp.MustCompile(`(?i)connection refused|actively refused`), "Nothing answered at the tax service's address (connection refused): PosAPI is not running there, or upstream.base_url names the wrong host or port."},
	{regexp.MustCompile(`(?i)no such host|server misbehaving`), "The tax service's host name could not be looked up (DNS): check the network and the host name in upstream.base_url."},
	{regexp.MustCompile(`(?i)network is unreachable|no route to host`), "This computer has no network route to the tax service: check its network connection."},
	{regexp.MustCompile(`(?i)x509|certificate|tls:`), "The secure connection to the tax service failed (TLS certificate): check upstream.base_url and this computer's clock."},
	{regexp.MustCompile(`(?i)ambiguous`), "The request may have reached the tax service, but its answer was lost."},
	{regexp.MustCompile(`(?i)i/o timeout|deadline exceeded|client\.timeout|timeout awaiting`), "The tax service did not answer in time."},
	{regexp.MustCompile(`(?i)connection reset|broken pipe|\bEOF\b`), "The connection to the tax service was cut before its answer arrived."},
	{regexp.MustCompile(`(?i)HTTP 429`), "The tax service asked receiptd to pause (too many requests); sending resumes by itself."},
	{regexp.MustCompile(`(?i)HTTP 5\d\d`), "The tax service answered with a server error: it is running but failing, and usually recovers by itself."},
	{regexp.MustCompile(`(?i)no sync worker`), "receiptd is not sending anything: its sync worker is not running."},
}

// plain says raw in a person's words; "" when no rule knows it (the page
// then shows the raw text itself).
func plain(raw string) string {
	for _, p := range plainErrors {
		if p.match.MatchString(raw) {
			return p.words
		}
	}
	return ""
}
