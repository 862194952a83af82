package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A compromised head office (issue 38): each finding of the security read
// as the fragment it sent, checked with `config check -config OWN -remote
// FRAGMENT` as the till checks what it receives. Every one is refused,
// naming the key and why: under the default control.allow (named keys,
// keys never remote, bounds), and with a till whose own file names the
// destination keys (what is refused even then).

// ownForRemote writes a till's own file: its data_dir, its own push with
// its credentials, and allow (a TOML array; "" for the default).
func ownForRemote(t *testing.T, allow string) (path, dataDir string) {
	t.Helper()
	dir := t.TempDir()
	dataDir = filepath.Join(dir, "data")
	text := fmt.Sprintf("data_dir = %s\n[fleet]\nremote_write_url = \"https://metrics.chain.example/api/v1/write\"\n"+
		"[fleet.headers]\nAuthorization = \"Bearer the-tills-own-token\"\n", tomlString(dataDir))
	if allow != "" {
		text += "[control]\nallow = " + allow + "\n"
	}
	path = filepath.Join(dir, "own.toml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path, dataDir
}

// requireRemoteRefused checks config check refuses fragment over own with
// a problem of key saying want, and names no other file than its own.
func requireRemoteRefused(t *testing.T, own, fragment, key, want string) {
	t.Helper()
	remote := writeFile(t, "remote.toml", fragment)
	code, _, stderr := runCLI(t, "config", "check", "-config", own, "-remote", remote)
	require.Equal(t, exitUsage, code, "accepted:\n%s", fragment)
	require.Contains(t, stderr, "receiptd config check: the remote config: ")
	var line string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, " "+key+": ") || strings.HasPrefix(strings.TrimSpace(l), key+": ") {
			line = l
		}
	}
	require.NotEmpty(t, line, "no problem names %s:\n%s", key, stderr)
	require.Contains(t, line, want, stderr)
}

func TestConfigCheckRefusesACompromisedHeadOffice(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	own, _ := ownForRemote(t, "")
	named := "itself (listing its section is not enough)"
	for _, c := range []struct{ name, fragment, key, want string }{
		// Copy every receipt off the till.
		{"backup to a UNC share", "[backup]\ndir = '\\\\host\\share'\n", "backup.dir", named},
		{"backup to a public folder", "[backup]\ndir = 'C:\\Users\\Public'\n", "backup.dir", named},
		{"backup through ..", "[backup]\ndir = \"/srv/../etc/cron.d\"\n", "backup.dir", named},
		// Fill the disk.
		{"a snapshot every second", "[backup]\nevery = \"1s\"\n", "backup.every", "must be at least 1m, not 1s (when set remotely"},
		{"keep without end", "[backup]\nkeep = 1000000\n", "backup.keep", "must be at least 1 and at most 1000, not 1000000"},
		// Take the till's credentials; a blind SSRF.
		{"push in clear elsewhere", "[fleet]\nremote_write_url = \"http://evil.example/write\"\n", "fleet.remote_write_url", named},
		{"push through a proxy", "[fleet]\nproxy = \"http://evil.example:3128\"\n", "fleet.proxy", named},
		{"headers of its own", "[fleet.headers]\nX-Evil = \"1\"\n", "fleet.headers.X-Evil", named},
		{"read a file as CA", "[fleet]\nca_file = \"/etc/passwd\"\n", "fleet.ca_file", named},
		// Issue receipts twice.
		{"keep finished entries 1ns", "[retention]\nkeep = \"1ns\"\n", "retention.keep", "must be at least 168h, not 1ns"},
		{"prune every tick", "[retention]\nprune_interval = \"1ns\"\n", "retention.prune_interval", "must be at least 1m and at most 24h, not 1ns"},
		// Silence and stall.
		{"answer at once", "[accept]\nwait = \"0s\"\n", "accept.wait", named},
		{"every sale 503", "[accept]\nqueued_answer = \"error\"\n", "accept.queued_answer", named},
		{"move the day", "[accept]\ntimezone = \"Pacific/Kiritimati\"\n", "accept.timezone", named},
		{"wait for ever", "[accept]\nmax_wait = \"2000000h\"\n", "accept.max_wait", named},
		{"backoff of years", "[sync]\nmax_backoff = \"2000000h\"\n", "sync.max_backoff", "at most 1h, not 2000000h"},
		{"warn never", "[alerts]\nunsent_warn = \"2000000h\"\nunsent_critical = \"2000000h\"\n", "alerts.unsent_critical", "at most 720h, not 2000000h"},
		{"outage never critical", "[alerts]\noutage_critical_after = \"2000000h\"\n", "alerts.outage_critical_after", "at most 720h"},
		{"no sendData of its own", "[posapi]\nauto_send_data = false\n", "posapi.auto_send_data", named},
		{"check PosAPI never", "[posapi]\ncheck_every = \"2000000h\"\n", "posapi.check_every", "at most 24h"},
		{"send after a year", "[posapi]\nsend_after = \"8760h\"\n", "posapi.send_after", "at most 72h"},
		// Hammer PosAPI.
		{"backoff of 1ns", "[sync]\nmin_backoff = \"1ns\"\n", "sync.min_backoff", "must be at least 100ms and at most 1m, not 1ns"},
		{"64 at once", "[sync]\nconcurrency = 64\n", "sync.concurrency", "must be at least 1 and at most 16, not 64"},
		{"sendData every second", "[posapi]\nsend_every = \"1s\"\n", "posapi.send_every", "must be at least 1m and at most 24h, not 1s (when set remotely"},
		{"100 ambiguous sends", "[sync]\nmax_ambiguous = 100\n", "sync.max_ambiguous", "must be at least 1 and at most 10, not 100"},
		// The labels go into every series.
		{"17 labels", "[fleet.labels]\n" + labels(17), "fleet.labels", "must be at most 16 labels, not 17"},
		{"a long label value", "[fleet.labels]\nshop = \"" + strings.Repeat("x", 257) + "\"\n", "fleet.labels.shop", "a label value must be at most 256 bytes, not 257"},
		{"push every second", "[fleet]\ninterval = \"1s\"\n", "fleet.interval", "must be at least 5s and at most 1h, not 1s (when set remotely"},
		// Remote log.* is never used but the level.
		{"log to a file of its choice", "[log]\nfile = \"/etc/cron.d/receiptd\"\n", "log.file", "can never be set remotely"},
		{"log format", "[log]\nformat = \"console\"\n", "log.format", "can never be set remotely"},
		{"log rotation", "[log]\nmax_size_mb = 100000\nmax_files = 100000\n", "log.max_files", "can never be set remotely"},
	} {
		t.Run(c.name, func(t *testing.T) { requireRemoteRefused(t, own, c.fragment, c.key, c.want) })
	}
}

// labels is n lines of distinct labels.
func labels(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "l%d = \"v\"\n", i)
	}
	return b.String()
}

// TestConfigCheckRefusesEvenWhenNamed: a till whose own file names the
// destination keys still refuses a network share, "..", a folder in or
// above data_dir, a push in clear to another computer (localhost is no
// loopback by name), and tells a head office nothing of a file's
// existence.
func TestConfigCheckRefusesEvenWhenNamed(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	own, dataDir := ownForRemote(t, `["accept", "sync", "alerts", "posapi", "fleet", "backup", "retention", "log", "backup.dir", "fleet.remote_write_url", "fleet.ca_file"]`)
	network := "is a network path; set remotely, snapshots stay on the till's own disks"
	backslashed := network // elsewhere not absolute at all
	if runtime.GOOS != "windows" {
		backslashed = "must be an absolute path"
	}
	for _, c := range []struct{ name, fragment, key, want string }{
		{"UNC share", "[backup]\ndir = '\\\\host\\share\\receiptd'\n", "backup.dir", backslashed},
		{"forward slashes", "[backup]\ndir = \"//host/share\"\n", "backup.dir", network},
		{"long UNC", "[backup]\ndir = '\\\\?\\UNC\\host\\share'\n", "backup.dir", backslashed},
		{"..", "[backup]\ndir = " + tomlString(throughDotDot()) + "\n", "backup.dir", `holds ".."`},
		{"inside data_dir", "[backup]\ndir = " + tomlString(filepath.Join(dataDir, "snapshots")) + "\n", "backup.dir", "must not be inside data_dir"},
		{"data_dir", "[backup]\ndir = " + tomlString(dataDir) + "\n", "backup.dir", "must not be data_dir"},
		{"above data_dir", "[backup]\ndir = " + tomlString(filepath.Dir(dataDir)) + "\n", "backup.dir", "must not hold data_dir"},
		{"http elsewhere", "[fleet]\nremote_write_url = \"http://evil.example/write\"\n", "fleet.remote_write_url", "set remotely, the push must use https://"},
		{"localhost by name", "[fleet]\nremote_write_url = \"http://localhost:9090/write\"\n", "fleet.remote_write_url", "is not a loopback address (for this computer write 127.0.0.1 or [::1]: the name localhost is not trusted)"},
	} {
		t.Run(c.name, func(t *testing.T) { requireRemoteRefused(t, own, c.fragment, c.key, c.want) })
	}

	// A CA file: missing, or there but no certificate, reads alike.
	var said []string
	for _, file := range []string{"/nonexistent/ca.pem", own} {
		remote := writeFile(t, "ca.toml", "[fleet]\nca_file = "+tomlString(file)+"\n")
		code, _, stderr := runCLI(t, "config", "check", "-config", own, "-remote", remote)
		require.Equal(t, exitUsage, code)
		require.Contains(t, stderr, "fleet.ca_file: cannot be used as a CA file")
		require.NotContains(t, stderr, file)
		said = append(said, stderr)
	}
	require.Equal(t, said[0], said[1], "a head office cannot tell a missing file from one that is there")

	// Loopback over http is still the till's own business.
	remote := writeFile(t, "loop.toml", "[fleet]\nremote_write_url = \"http://127.0.0.1:9090/write\"\n")
	code, stdout, stderr := runCLI(t, "config", "check", "-config", own, "-remote", remote)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "sets: fleet.remote_write_url")
}

// TestConfigCheckHoldsTheOwnFileToTheBounds: the bounds are the till's
// own too: a retention that forgets the idempotency keys, or snapshots
// written into data_dir, are refused in the till's own file.
func TestConfigCheckHoldsTheOwnFileToTheBounds(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	data := filepath.Join(t.TempDir(), "data")
	for _, c := range []struct{ name, toml, want string }{
		{"retention 1ns", "[retention]\nkeep = \"1ns\"\n", "retention.keep: must be at least 168h, not 1ns"},
		{"prune every 1ns", "[retention]\nprune_interval = \"1ns\"\n", "retention.prune_interval: must be at least 1m and at most 24h, not 1ns"},
		{"snapshots in data_dir", "[backup]\ndir = " + tomlString(filepath.Join(data, "snap")) + "\n", "backup.dir: must not be inside data_dir"},
		{"64 at once", "[sync]\nconcurrency = 64\n", "sync.concurrency: must be at least 1 and at most 16, not 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "own.toml", "data_dir = "+tomlString(data)+"\n"+c.toml)
			code, _, stderr := runCLI(t, "config", "check", "-config", path)
			require.Equal(t, exitUsage, code)
			require.Contains(t, stderr, c.want)
		})
	}
}

// throughDotDot is an absolute path through "..", not cleaned away:
// /srv/../etc/cron.d, or C:\srv\..\etc\cron.d on Windows.
func throughDotDot() string {
	sep := string(filepath.Separator)
	return filepath.VolumeName(os.TempDir()) + sep + strings.Join([]string{"srv", "..", "etc", "cron.d"}, sep)
}
