package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// EnvControlHeaderPrefix + NAME sets the header NAME (underscores become
// hyphens, canonical case) on every request to control.opamp_url, as
// EnvUpstreamHeaderPrefix does for the tax service: the head office's
// token need not be written into the file.
const EnvControlHeaderPrefix = "RECEIPTD_CONTROL_HEADERS_"

// Control is the management channel to a head office over OpAMP
// ([control]): who the till is, its health and effective configuration
// reported, and a remote configuration fragment laid over the till's own
// file (see Merge).
type Control struct {
	// OpAMPURL is the head office's OpAMP server: ws:// or wss:// for
	// WebSocket, http:// or https:// for HTTP polling. Empty (the default)
	// turns the channel off. Anything but loopback must be wss or https.
	OpAMPURL string `toml:"opamp_url" change:"local"`
	// Headers are set on every request to OpAMPURL (say Authorization).
	// Never nil after Default or Load.
	Headers map[string]Secret `toml:"headers" change:"local"`
	// CAFile is a PEM file of CAs trusted besides the system's.
	CAFile string `toml:"ca_file" change:"local"`
	// Proxy is an http, https or socks5 URL; empty: the environment's
	// HTTPS_PROXY / HTTP_PROXY.
	Proxy string `toml:"proxy" change:"local"`
	// PollEvery is the time between two polls over HTTP (and between two
	// heartbeats over WebSocket); at least 1s.
	PollEvery Duration `toml:"poll_every" change:"local"`
	// Allow lists the sections ("accept") and keys ("accept.wait") a
	// remote fragment may set. Never nil after Default or Load. The keys
	// of NeverRemote can never be listed; "upstream" only by the till's own
	// file, which is the only place Allow is read from.
	Allow []string `toml:"allow" change:"local"`
	// RollbackAfter is how long a remote configuration has to make the
	// daemon ready before the last good one comes back; at least 1s.
	RollbackAfter Duration `toml:"rollback_after" change:"local"`
}

// Enabled reports whether the channel is on.
func (c Control) Enabled() bool { return c.OpAMPURL != "" }

// NeverRemote are the keys a remote fragment can never set, whatever
// control.allow says: where the till listens and who may call it, where
// its receipts are, and the channel itself (a head office could otherwise
// lock itself out, or open the till's API to the network). It is read
// from the change tags of Config (a table whose keys are all the till's
// own is listed whole): "listen", "listen_unix", "data_dir", "auth",
// "control".
var NeverRemote = neverRemoteKeys()

// NamedRemote are the keys a remote fragment may set only when control.allow
// of the till's own file names the key itself ("backup.dir"); the section
// ("backup", which DefaultAllow lists) is not enough. They say where the
// till's data goes or what it reads, how a sale is answered, and whether
// the till sends its own data: a head office that could set them could
// copy the receipts off the till, take its credentials, or stall its
// sales. Read from the change tags (change:"named").
var NamedRemote = namedRemoteKeys()

// DefaultAllow is control.allow's default: every section a head office
// tunes across a chain, and none that says where a till's data or
// upstream is.
var DefaultAllow = []string{"accept", "sync", "alerts", "posapi", "fleet", "backup", "retention", "log"}

func defaultControl() Control {
	return Control{
		Headers:       map[string]Secret{},
		PollEvery:     Dur(30 * time.Second),
		Allow:         slices.Clone(DefaultAllow),
		RollbackAfter: Dur(60 * time.Second),
	}
}

// check validates [control]. The keys are checked whether or not the
// channel is on, so a section prepared for later is right when switched on.
func (c Control) check(ch *checker) {
	if c.OpAMPURL != "" {
		if u, ok := checkURL(ch, "control.opamp_url", c.OpAMPURL, "wss", "https", "ws", "http"); ok {
			if (u.Scheme == "ws" || u.Scheme == "http") && !isLoopback(u.Hostname()) {
				ch.add("control.opamp_url", "%q is not a loopback address (for this computer write 127.0.0.1 or [::1]: the name localhost is not trusted): use wss:// or https://, so a remote configuration travels only over TLS", c.OpAMPURL)
			}
		}
	}
	checkHeaders(ch, "control.headers", c.Headers)
	checkTransport(ch, "control", c.CAFile, c.Proxy)
	if c.PollEvery.Duration < time.Second {
		ch.add("control.poll_every", "must be at least 1s, not %s", c.PollEvery)
	}
	if c.RollbackAfter.Duration < time.Second {
		ch.add("control.rollback_after", "must be at least 1s, not %s", c.RollbackAfter)
	}
	for i, entry := range c.Allow {
		if problem := allowProblem(entry); problem != "" {
			ch.add(fmt.Sprintf("control.allow[%d]", i), "%s", problem)
		}
	}
}

// allowProblem says what is wrong with one control.allow entry, or "".
func allowProblem(entry string) string {
	if never := neverRemote(entry); never != "" {
		return fmt.Sprintf("%q can never be set remotely (%s is the till's own)", entry, never)
	}
	if !slices.Contains(knownKeys, entry) {
		return fmt.Sprintf("%q is not a section or key of the configuration", entry)
	}
	return ""
}

// namedProblem says why a fragment may not set key, a key of NamedRemote
// (or below one: a header of fleet.headers), under allow; "" when allow
// names it (the key, or a key below it) or key is not named.
func namedProblem(key string, allow []string) string {
	lower := strings.ToLower(key)
	for _, n := range NamedRemote {
		if lower != n && !strings.HasPrefix(lower, n+".") {
			continue
		}
		for _, a := range allow {
			a = strings.ToLower(a)
			if (a == n || strings.HasPrefix(a, n+".")) && (lower == a || strings.HasPrefix(lower, a+".")) {
				return ""
			}
		}
		return fmt.Sprintf("a head office may set it only when control.allow of the till's own file names %q itself (listing its section is not enough); the till keeps its own value", n)
	}
	return ""
}

// neverRemote returns the entry of NeverRemote that key is or is under,
// or "".
func neverRemote(key string) string {
	for _, n := range NeverRemote {
		if strings.EqualFold(key, n) || strings.HasPrefix(strings.ToLower(key), n+".") {
			return n
		}
	}
	return ""
}
