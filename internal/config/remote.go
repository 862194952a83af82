package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// What a fragment may not do even where control.allow lets it set a key
// (issue 38; docs/decisions/opamp.md's threat model): the checks Validate
// makes of any file, made again with a head office in mind.

// remoteValues is every problem of the keys a fragment set (keys, dotted)
// in cfg, the merged configuration, beyond what Validate finds: a bound
// kept to its remote minimum, a backup.dir on a network share or written
// with "..", a push over http:// to another computer. And it drops the
// till's own fleet.headers from cfg when the fragment moved the push to
// another URL than own's: the till's credentials go only where its own
// file sends them.
func remoteValues(own Config, cfg *Config, keys []string) []*KeyError {
	var problems []*KeyError
	add := func(key, format string, args ...any) {
		problems = append(problems, &KeyError{Key: key, Problem: fmt.Sprintf(format, args...)})
	}
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	for _, b := range Bounds {
		if set[b.Key] || b.Key == "fleet.labels" && hasKeyBelow(keys, b.Key) {
			if problem := b.problem(*cfg, true); problem != "" {
				add(b.Key, "%s", problem)
			}
		}
	}
	if set["backup.dir"] && cfg.Backup.Dir != "" {
		if problem := remoteDirProblem(cfg.Backup.Dir); problem != "" {
			add("backup.dir", "%s", problem)
		}
	}
	if set["fleet.remote_write_url"] && cfg.Fleet.RemoteWriteURL != "" {
		if u, err := url.Parse(cfg.Fleet.RemoteWriteURL); err == nil && u.Scheme != "https" && !isLoopback(u.Hostname()) {
			add("fleet.remote_write_url", "%q is not a loopback address (for this computer write 127.0.0.1 or [::1]: the name localhost is not trusted): set remotely, the push must use https://, so the till's metrics and headers never travel in clear", cfg.Fleet.RemoteWriteURL)
		}
	}
	if cfg.Fleet.RemoteWriteURL != own.Fleet.RemoteWriteURL {
		cfg.Fleet.Headers = fragmentHeaders(cfg.Fleet.Headers, keys)
	}
	return problems
}

// remoteDirProblem says why a head office may not send snapshots to dir,
// or "": a network path (\\host\share, //host/share, \\?\UNC\...) takes
// every receipt off the till, and ".." hides where the path goes. A till
// that keeps its snapshots on a share says so in its own file.
func remoteDirProblem(dir string) string {
	if len(dir) >= 2 && isSlash(dir[0]) && isSlash(dir[1]) {
		return fmt.Sprintf("%q is a network path; set remotely, snapshots stay on the till's own disks (a till that keeps them on a share says so in its own file)", dir)
	}
	for _, part := range strings.FieldsFunc(dir, func(r rune) bool { return r < 0x80 && isSlash(byte(r)) }) {
		if part == ".." {
			return fmt.Sprintf("%q holds \"..\"; set remotely, write the folder without it", dir)
		}
	}
	return ""
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

// fragmentHeaders keeps of headers only those the fragment itself set
// (keys "fleet.headers.NAME"): the push goes to a URL the till's own file
// did not name, which gets none of the till's own headers.
func fragmentHeaders(headers map[string]Secret, keys []string) map[string]Secret {
	out := make(map[string]Secret)
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		if slices.Contains(keys, "fleet.headers."+name) {
			out[name] = headers[name]
		}
	}
	return out
}

func hasKeyBelow(keys []string, table string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, table+".") })
}

// vagueCAProblem is what a fragment's refusal says of a ca_file that
// cannot be used, whatever the cause: a missing file and one that holds
// no certificate read alike, so a head office cannot learn which files a
// till has. `receiptd config check` on the till gives the cause.
const vagueCAProblem = "cannot be used as a CA file (run receiptd config check on the till for why)"

// caProblem starts what Validate says of a ca_file it cannot use.
const caProblem = "cannot be used as a CA file:"

// hideFiles rewrites every ca_file problem of a fragment's refusal to
// vagueCAProblem.
func hideFiles(problems []*KeyError) {
	for _, p := range problems {
		if strings.HasSuffix(p.Key, ".ca_file") && strings.HasPrefix(p.Problem, caProblem) {
			p.Problem = vagueCAProblem
		}
	}
}
