package fleetcontrol

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control/controltest"
)

// ownAllow is each till's own control.allow: the default sections, and
// the named keys this chain lets its head office set (issue 38): how a
// queued sale is answered, where snapshots go, where the push goes, a CA
// for it. Every other named key (accept.wait, fleet.proxy, ...) stays the
// till's own.
var ownAllow = []string{"accept", "sync", "alerts", "posapi", "fleet", "backup", "retention", "log",
	"accept.queued_answer", "backup.dir", "fleet.remote_write_url", "fleet.ca_file"}

// attempt is one fragment a compromised head office sends every till,
// written for each till (its data directory differs), and the keys its
// FAILED message must name.
type attempt struct {
	name     string
	fragment func(tl *till) string
	keys     []string
	// hide: what the message must not say (a file's path or whether it
	// is there).
	hide []string
}

// compromisedHeadOfficeIsRefused is issue 38's "done when" on 20 tills: a
// compromised head office tries every finding of the security read; every
// attempt is FAILED naming each key, every till keeps its config and goes
// on taking sales, no request reaches the address it pushed, and nothing
// is written outside the till's folders.
func compromisedHeadOfficeIsRefused(t *testing.T, ho *controltest.Server, l *ledger, tills []*till) {
	var hits atomic.Int64 // the attacker's remote-write endpoint: the till's headers and metrics must never come
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer evil.Close()
	elsewhere := t.TempDir() // outside every till's folders
	evilHost := strings.TrimPrefix(evil.URL, "http://")
	before := ho.ByAttr("till")
	around := make(map[string][]string, len(tills)) // what lies beside each data_dir
	for _, tl := range tills {
		around[tl.name] = list(t, filepath.Dir(tl.proc().Config().DataDir))
	}

	for _, a := range []attempt{{
		// Where data goes, how a sale is answered, the log, and every
		// bound a file is held to: one fragment, every key named.
		name: "named, never remote and out of bounds",
		fragment: func(tl *till) string {
			ca := "/etc/passwd" // there, but no certificate
			if tl.ws {
				ca = filepath.Join(elsewhere, "no-such-ca.pem")
			}
			data := tl.proc().Config().DataDir
			dir := [...]string{filepath.Join(data, "snapshots"), filepath.Dir(data)}[tillIndex(tl)%2] // in it, above it
			return fmt.Sprintf(`[accept]
wait = "0s"
max_wait = "2000000h"
timezone = "Pacific/Kiritimati"
[fleet]
proxy = "http://%[1]s"
ca_file = %[2]q
[fleet.headers]
X-Evil = "1"
[posapi]
auto_send_data = false
check_every = "2000000h"
send_after = "8760h"
[log]
file = %[3]q
format = "console"
max_size_mb = 100000
max_files = 100000
[retention]
keep = "1ns"
prune_interval = "1ns"
[backup]
dir = %[5]q
keep = 1000000
[sync]
concurrency = 64
max_ambiguous = 100
max_backoff = "2000000h"
[alerts]
unsent_warn = "2000000h"
unsent_critical = "2000000h"
outage_critical_after = "2000000h"
[fleet.labels]
%[4]s`, evilHost, ca, filepath.Join(elsewhere, "receiptd.log"), labels(15), dir)
		},
		keys: []string{"accept.wait", "accept.max_wait", "accept.timezone", "fleet.proxy", "fleet.ca_file",
			"fleet.headers.X-Evil", "posapi.auto_send_data", "posapi.check_every", "posapi.send_after",
			"log.file", "log.format", "log.max_size_mb", "log.max_files", "retention.keep", "retention.prune_interval",
			"backup.dir", "backup.keep", "sync.concurrency", "sync.max_ambiguous", "sync.max_backoff", "alerts.unsent_warn",
			"alerts.unsent_critical", "alerts.outage_critical_after", "fleet.labels"},
		hide: []string{"/etc/passwd", "no-such-ca.pem", "no such file", "PEM"},
	}, {
		// What no head office may do even where the till names the key:
		// snapshots off the till (a share, a path through ".."), a push in
		// clear (to "localhost": not loopback by name, and the attacker's
		// server listens there), and the bounds a fragment keeps to where the own file
		// may go lower. (Into or above data_dir: the attempt above.)
		name: "even where allowed",
		fragment: func(tl *till) string {
			dir := [...]string{"//" + evilHost + "/share", elsewhere + "/x/../snapshots"}[tillIndex(tl)%2]
			return fmt.Sprintf(`[backup]
dir = %q
every = "1s"
[fleet]
remote_write_url = "http://localhost:%s/api/v1/write"
interval = "1s"
[posapi]
send_every = "1s"
[sync]
min_backoff = "1ns"
`, dir, evil.URL[strings.LastIndex(evil.URL, ":")+1:])
		},
		keys: []string{"backup.dir", "backup.every", "fleet.remote_write_url", "fleet.interval", "posapi.send_every", "sync.min_backoff"},
	}} {
		hashes := make(map[string][]byte, len(tills))
		for _, tl := range tills {
			hash, n := ho.SetConfig(controltest.AttrIs("till", tl.name), a.fragment(tl))
			require.Equal(t, 1, n)
			hashes[tl.name] = hash
		}
		took := waitFor(t, ho, tills[0], "every till reports FAILED for "+a.name, 2*time.Minute, func() bool {
			return ho.Count(func(ag controltest.Agent) bool { return reported(failed, hashes[ag.Attr("till")])(ag) }) == tillCount
		})
		now := ho.ByAttr("till")
		for _, tl := range tills {
			msg := now[tl.name].RemoteStatus.GetErrorMessage()
			for _, key := range a.keys {
				require.Contains(t, msg, key+": ", "till %s names %s", tl.name, key)
			}
			for _, h := range a.hide {
				require.NotContains(t, msg, h, "till %s tells the head office of a file", tl.name)
			}
			require.Equal(t, string(before[tl.name].Effective), string(now[tl.name].Effective), "till %s runs its previous config", tl.name)
		}
		t.Logf("%s: FAILED on every till in %s; till %s said: %s", a.name, took.Round(time.Millisecond), tills[2].name,
			now[tills[2].name].RemoteStatus.GetErrorMessage())
	}

	for _, tl := range tills {
		require.Equal(t, http.StatusOK, l.post(t, tl, tl.name+"-after-attack"), "till %s takes sales", tl.name)
		require.Equal(t, around[tl.name], list(t, filepath.Dir(tl.proc().Config().DataDir)), "nothing new beside %s's data_dir", tl.name)
		require.NoDirExists(t, filepath.Join(tl.proc().Config().DataDir, "snapshots"))
	}
	require.Empty(t, list(t, elsewhere), "nothing written outside the tills' folders")
	require.Zero(t, hits.Load(), "no till pushed to the attacker's address")
}

// tillIndex is tl's number (T07: 7).
func tillIndex(tl *till) int {
	var i int
	_, _ = fmt.Sscanf(tl.name, "T%d", &i)
	return i
}

// labels is n TOML lines of distinct labels.
func labels(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "l%d = \"v\"\n", i)
	}
	return b.String()
}

// list is the names in dir.
func list(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := make([]string, 0, len(des))
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}
