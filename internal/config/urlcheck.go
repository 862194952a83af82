package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// URLProblem is the one check of every URL key (upstream.base_url,
// lookup_base_url, stock_base_url, proxy, fleet.remote_write_url, and any
// URL key added later): an absolute URL with one of schemes (lower case,
// without "://"), a host, a port from 1 to 65535 when one is written, and
// no query, fragment or credentials. It returns the parsed URL and "", or
// nil and the problem in words an operator can act on ("needs http:// or
// https:// in front, like ...", "port 70812 is out of range: a port is a
// number from 1 to 65535"). A KeyError is built by prefixing the key.
// A problem that quotes the URL shows any credentials in it as "(set)".
func URLProblem(raw string, schemes ...string) (*url.URL, string) {
	if len(schemes) == 0 {
		schemes = []string{"http", "https"}
	}
	example := schemes[0] + "://127.0.0.1:7081"
	needs := "needs " + schemeList(schemes) + " in front"
	scheme, rest, found := strings.Cut(raw, "://")
	shown := hideUserinfo(raw)
	switch {
	case strings.TrimSpace(raw) == "":
		return nil, "must be set, like " + strconv.Quote(example)
	case !found:
		return nil, fmt.Sprintf("%s, like %q, not %q", needs, example, shown)
	case !slices.Contains(schemes, strings.ToLower(scheme)):
		return nil, fmt.Sprintf("%s, not %q", needs, scheme+"://")
	case strings.ContainsAny(raw, " \t\r\n"):
		return nil, fmt.Sprintf("must not contain spaces or line breaks: %q", shown)
	}
	host, _, _ := strings.Cut(rest, "/")
	if problem := hostPortProblem(host); problem != "" {
		return nil, problem
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("cannot be read as a URL (look for a stray character): %q", shown)
	case u.User != nil:
		return nil, "must not carry a user name or password; put credentials in a header instead"
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Sprintf("must not carry a query (?...) or a fragment (#...): %q", shown)
	}
	return u, ""
}

// hideUserinfo is raw with whatever stands before an "@" in its host part
// (a user name and password, or a token) shown as Redacted, for a message
// that quotes a refused URL.
func hideUserinfo(raw string) string {
	_, rest, found := strings.Cut(raw, "://")
	if !found {
		rest = raw
	}
	start := len(raw) - len(rest)
	authority := rest[:strings.IndexAny(rest+"/", "/?#")]
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return raw
	}
	return raw[:start] + Redacted + raw[start+at:]
}

// hostPortProblem checks the part between "://" and the path.
func hostPortProblem(hostport string) string {
	if strings.Contains(hostport, "@") {
		return "must not carry a user name or password; put credentials in a header instead"
	}
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	} else if strings.Count(hostport, ":") == 1 {
		host, port, _ = strings.Cut(hostport, ":")
	}
	if host == "" || strings.HasPrefix(host, "?") || strings.HasPrefix(host, "#") {
		return "needs a host name or address after \"://\", like \"127.0.0.1:7081\""
	}
	if port == "" && strings.HasSuffix(hostport, ":") {
		return "has a \":\" after the host but no port number"
	}
	if port == "" {
		return ""
	}
	n, err := strconv.Atoi(port)
	switch {
	case err != nil:
		return fmt.Sprintf("port %q is not a number: a port is a number from 1 to 65535", port)
	case n < 1 || n > 65535:
		return fmt.Sprintf("port %d is out of range: a port is a number from 1 to 65535", n)
	}
	return ""
}

// schemeList is "http:// or https://", "http://, https:// or socks5://".
func schemeList(schemes []string) string {
	parts := make([]string, len(schemes))
	for i, s := range schemes {
		parts[i] = s + "://"
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
