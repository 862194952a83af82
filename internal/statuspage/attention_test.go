package statuspage

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// attentionText is the visible text of the page's first section, the one
// a person reads first; it fails unless that section comes before the
// summary cards.
func attentionText(t *testing.T, d Data) string {
	t.Helper()
	txt := text(render(t, d))
	start := strings.Index(txt, "this page refreshes every 5 seconds")
	end := strings.Index(txt, "Tax service ")
	require.True(t, start >= 0 && end > start, "the attention section comes before the tax service card: %s", txt)
	return strings.TrimSpace(txt[start+len("this page refreshes every 5 seconds") : end])
}

// requireInOrder fails unless every one of want stands in got, each after
// the one before.
func requireInOrder(t *testing.T, got string, want []string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		require.GreaterOrEqual(t, i, 0, "want %q after position %d in the attention section:\n%s", w, at, got)
		at += i
	}
}

func emptyData() Data {
	return Data{Now: now, UpstreamUp: true, UpstreamSince: now.Add(-time.Hour), Alert: AlertNone,
		UnsentWarn: 24 * time.Hour, UnsentCritical: 72 * time.Hour, Counts: map[string]int{"sent": 3}}
}

// attentionCases are the states a person meets, with what the first
// section must say, in order, and must not say.
var attentionCases = []struct {
	name   string
	data   func() Data
	want   []string // in this order
	absent []string
}{{
	name:   "empty",
	data:   emptyData,
	want:   []string{"✓ Nothing needs attention"},
	absent: []string{"Needs attention (", "receiptd retry"},
}, {
	name: "outage",
	data: func() Data {
		d := emptyData()
		d.UpstreamUp, d.UpstreamSince = false, now.Add(-90*time.Second)
		d.LastError = `create receipt: not sent: Post "http://127.0.0.1:7081/rest/receipt": dial tcp 127.0.0.1:7081: connect: connection refused`
		d.LastErrorAt = now.Add(-4 * time.Second)
		d.Counts["queued"] = 1
		return d
	},
	want: []string{
		"Needs attention (1)", "✗ The tax service cannot be reached (for 1m 30s)",
		"Sales can go on: receipts are stored here and sent as soon as it answers again.",
		"Cause: Nothing answered at the tax service's address (connection refused): PosAPI is not running there, or upstream.base_url names the wrong host or port. (14:29:56 UTC, 4s ago)",
		"The error as recorded create receipt: not sent:",
		"Check this computer's network connection.",
		"upstream.base_url", "journalctl -u receiptd -n 50",
	},
	absent: []string{"receiptd retry", "Earlier problem"},
}, {
	name: "an outage of 7s, critical after 15m",
	data: func() Data {
		d := emptyData()
		outage(&d, 7*time.Second, 15*time.Minute)
		return d
	},
	want: []string{
		"Needs attention (1)", "⚠ The tax service cannot be reached (for 7s)",
		"Sales can go on", "this becomes critical after 15m (alerts.outage_critical_after)",
		"Check this computer's network connection.",
	},
	absent: []string{"✗"},
}, {
	name: "an outage of 15m, critical after 15m",
	data: func() Data {
		d := emptyData()
		outage(&d, 15*time.Minute, 15*time.Minute)
		return d
	},
	want:   []string{"Needs attention (1)", "✗ The tax service cannot be reached (for 15m)", "Sales can go on"},
	absent: []string{"⚠", "becomes critical"},
}, {
	name: "rejected",
	data: func() Data {
		d := emptyData()
		d.Counts["rejected"] = 4
		d.Failures = []Failure{
			{QueueID: "Q000000000007", State: "rejected", At: now.Add(-time.Minute), Message: "merchantTin: not registered"},
			{QueueID: "Q000000000006", State: "rejected", At: now.Add(-2 * time.Minute), Message: "totalAmount does not add up"},
		}
		return d
	},
	want: []string{
		"⚠ 4 receipts refused by the tax service",
		"Correct the sale in the POS and send it again with the same bill number",
		"send it unchanged: receiptd retry Q000000000007",
		"Q000000000007 14:29:00 UTC merchantTin: not registered",
		"Q000000000006 14:28:00 UTC totalAmount does not add up",
		"and 2 more: receiptd entries -state rejected",
	},
	absent: []string{"-force", "The error as recorded"},
}, {
	name: "held",
	data: func() Data {
		d := emptyData()
		d.Counts["held"] = 1
		d.Failures = []Failure{{QueueID: "Q000000000012", State: "held", At: now.Add(-time.Minute),
			Message: `create receipt: ambiguous: Post "http://127.0.0.1:7081/rest/receipt": EOF`}}
		return d
	},
	want: []string{
		"⚠ 1 receipt held: check before sending again",
		"may already have issued it",
		"an answer was lost, the receipt came back from a backup, or its stored copy is damaged",
		"Look each one up at the tax service",
		"Not there: send it again, deliberately: receiptd retry -force Q000000000012",
		"There: do not send it again",
		"Q000000000012 14:29:00 UTC The request may have reached the tax service, but its answer was lost. as recorded create receipt: ambiguous:",
	},
	absent: []string{"more:"},
}, {
	name: "critical at a threshold of 2s",
	data: func() Data {
		d := emptyData()
		d.Alert, d.OldestUnsentAge = AlertCritical, 5*time.Second
		d.UnsentWarn, d.UnsentCritical = time.Second, 2*time.Second
		d.Counts["queued"] = 2
		return d
	},
	want: []string{
		"✗ The oldest unsent receipt is 5s old, past 2s (alerts.unsent_critical)",
		"receiptd entries -state queued -limit 5",
	},
	absent: []string{"3 days", "72h"},
}, {
	name: "critical with only held receipts unsent",
	data: func() Data {
		d := emptyData()
		d.Alert, d.OldestUnsentAge = AlertCritical, 80*time.Hour
		d.Counts["held"], d.Counts["rejected"] = 1, 1
		d.Failures = []Failure{
			{QueueID: "Q000000000012", State: "held", At: now.Add(-80 * time.Hour), Message: "held after 3 ambiguous attempts"},
			{QueueID: "Q000000000013", State: "rejected", At: now.Add(-time.Hour), Message: "merchantTin: not registered"},
		}
		return d
	},
	want: []string{
		"✗ The oldest unsent receipt is",
		"Nothing is waiting to be sent: the oldest unsent receipts are the held ones",
		"⚠ 1 receipt held",
	},
	absent: []string{"receiptd entries -state queued"},
}, {
	name: "payment and disk full and database, most urgent first",
	data: func() Data {
		d := emptyData()
		d.Counts["payment"] = 1
		d.Failures = []Failure{{QueueID: "Q000000000003", State: "payment", At: now, Message: "payment not settled"}}
		d.DiskFull, d.DiskFullSince = "update /var/lib/receiptd/receiptd.db: disk full: the database cannot grow: file too large", now.Add(-time.Minute)
		d.DatabasePath = "/var/lib/receiptd/receiptd.db"
		d.DatabaseFailed = "update /var/lib/receiptd/receiptd.db: database write failed earlier; reopen required: commit failed: input/output error"
		return d
	},
	want: []string{
		"Needs attention (3)",
		"✗ The database refuses writes", "receiptd restart",
		"✗ The disk is full: new receipts cannot be stored", "(14:29:00 UTC, 1m ago)",
		"Free space on the disk that holds /var/lib/receiptd: df -h /var/lib/receiptd",
		"⚠ 1 receipt with the payment not settled (PAYMENT)", "receiptd retry Q000000000003",
	},
}}

// onOS renders the page's commands as on goos for the rest of the test.
func onOS(t *testing.T, goos string) {
	t.Helper()
	was := hostOS
	hostOS = goos
	t.Cleanup(func() { hostOS = was })
}

func TestAttentionPerState(t *testing.T) {
	onOS(t, "linux")
	for _, c := range attentionCases {
		t.Run(c.name, func(t *testing.T) {
			got := attentionText(t, c.data())
			requireInOrder(t, got, c.want)
			for _, a := range c.absent {
				require.NotContains(t, got, a)
			}
		})
	}
}

// TestStaleErrorIsDatedAndPast: after recovery, the old "connection
// refused" is shown as past, with its date, never under "Reachable" as if
// it were now.
func TestStaleErrorIsDatedAndPast(t *testing.T) {
	t.Parallel()
	d := emptyData()
	d.UpstreamSince = now.Add(-10 * time.Minute)
	d.LastError = "dial tcp 127.0.0.1:7081: connect: connection refused"
	d.LastErrorAt = now.Add(-25 * time.Minute)
	txt := text(render(t, d))
	require.Contains(t, txt, "✓ Nothing needs attention")
	require.Contains(t, txt, "receiptd: tax service reachable, 0 waiting", "the title counts nothing to attend to")
	require.Contains(t, txt, "✓ Reachable up for 10m (since 14:20:00 UTC)")
	require.Contains(t, txt, "Earlier problem, now past (14:05:00 UTC, 25m ago): Nothing answered at the tax service's address (connection refused)")
	require.Contains(t, txt, "The error as recorded dial tcp 127.0.0.1:7081: connect: connection refused")
	require.NotContains(t, txt, "Last error")

	// An error after the recovery (a 503 that did not take the link down)
	// is not past.
	d.LastError, d.LastErrorAt = "create receipt: transient: HTTP 503: Service Unavailable", now.Add(-time.Minute)
	txt = text(render(t, d))
	require.Contains(t, txt, "Last error (14:29:00 UTC, 1m ago): The tax service answered with a server error")
	require.NotContains(t, txt, "Earlier problem")
}

func TestPlain(t *testing.T) {
	t.Parallel()
	cases := []struct{ raw, want string }{
		{"dial tcp 10.0.0.5:7081: connect: connection refused", "connection refused"},
		{"dial tcp 127.0.0.1:7081: connectex: No connection could be made because the target machine actively refused it.", "connection refused"},
		{"dial tcp: lookup posapi.local on 127.0.0.53:53: no such host", "(DNS)"},
		{"dial tcp 10.0.0.5:7081: connect: network is unreachable", "no network route"},
		{"tls: failed to verify certificate: x509: certificate has expired", "TLS certificate"},
		{`create receipt: ambiguous: Post "http://x/rest/receipt": EOF`, "answer was lost"},
		{"context deadline exceeded (Client.Timeout exceeded while awaiting headers)", "did not answer in time"},
		{"read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer", "was cut"},
		{"create receipt: transient: HTTP 502: Bad Gateway", "server error"},
		{"create receipt: transient: HTTP 429: Too Many Requests", "pause"},
		{"no sync worker: nothing is sent", "not sending anything"},
		{"update x.db: disk full: the database cannot grow: file too large", "The disk is full"},
		{"merchantTin: not registered", ""},
		{"HTTP 5", ""},
	}
	for _, c := range cases {
		got := plain(c.raw)
		if c.want == "" {
			require.Empty(t, got, c.raw)
			continue
		}
		require.Contains(t, got, c.want, c.raw)
	}
}

// TestWindowsCommands: on Windows the page names Windows' commands and log.
func TestWindowsCommands(t *testing.T) {
	onOS(t, "windows")
	d := emptyData()
	d.UpstreamUp, d.LastError = false, "dial tcp 127.0.0.1:7081: connectex: No connection could be made because the target machine actively refused it."
	d.DiskFull, d.DatabasePath = "update x: disk full: the database cannot grow", `D:\receiptd\data\receiptd.db`
	got := attentionText(t, d)
	require.Contains(t, got, `Get-Content C:\ProgramData\receiptd\logs\receiptd.log -Tail 50`)
	require.Contains(t, got, "Get-PSDrive ")
	require.NotContains(t, got, "journalctl")
	require.NotContains(t, got, "df -h")
	require.Contains(t, got, "Nothing answered at the tax service's address (connection refused)", "Windows' words for it too")
}

// Issue 32, point 8: the page sends a person to the log where it is: the
// terminal in the demo and a foreground run, the file when log.file is
// set, the journal for a service.
func TestLogStepNamesWhereTheLogIs(t *testing.T) {
	for _, tc := range []struct {
		name, goos string
		change     func(*Data)
		want       string
		absent     string
	}{
		{"service on Linux", "linux", func(*Data) {}, "journalctl -u receiptd -n 50", "terminal"},
		{"demo or run in a terminal", "linux", func(d *Data) { d.LogTerminal = true }, "receiptd's log is the terminal window it runs in", "journalctl"},
		{"log file on Linux", "linux", func(d *Data) { d.LogFile = "/var/log/receiptd/receiptd.log" }, "tail -n 50 /var/log/receiptd/receiptd.log", "journalctl"},
		{"log file on Windows", "windows", func(d *Data) { d.LogFile = `D:\logs\receiptd.log` }, `Get-Content D:\logs\receiptd.log -Tail 50`, "journalctl"},
		{"terminal on Windows", "windows", func(d *Data) { d.LogTerminal = true }, "the terminal window it runs in", `C:\ProgramData`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onOS(t, tc.goos)
			d := emptyData()
			d.UpstreamUp = false
			tc.change(&d)
			got := attentionText(t, d)
			require.Contains(t, got, tc.want)
			require.NotContains(t, got, tc.absent)
		})
	}
}

// Issue 32, point 8: "Head office" is a section of its own after the
// snapshots' (it was inside it, touching the box above).
func TestHeadOfficeIsItsOwnSection(t *testing.T) {
	page := render(t, emptyData())
	backup := strings.Index(page, `<section aria-labelledby="h-backup">`)
	fleet := strings.Index(page, `<section aria-labelledby="h-fleet">`)
	require.True(t, backup > 0 && fleet > backup)
	require.Contains(t, page[backup:fleet], "</section>", "the snapshots' section ends before the head office's")
	require.NotContains(t, page[fleet:], `<p class="ok"`, "the head office's line has a box of its own")
}

// Issue 40, item 3: a tax service out of reach for less than
// alerts.outage_critical_after is a warning on its card too, and the card
// still sends a person to its item; past it, both are critical.
func TestOutageCardFollowsItsItem(t *testing.T) {
	for _, tc := range []struct {
		name        string
		down        time.Duration
		card, title string
	}{
		{"a blip", 7 * time.Second, `<article class="card warn" aria-labelledby="h-upstream">`, "Tax service ⚠ Unreachable down for 7s"},
		{"past the grace", 20 * time.Minute, `<article class="card critical" aria-labelledby="h-upstream">`, "Tax service ✗ Unreachable down for 20m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := emptyData()
			outage(&d, tc.down, 15*time.Minute)
			page := render(t, d)
			require.Contains(t, page, tc.card)
			require.Contains(t, text(page), tc.title)
			require.Contains(t, text(page), "Why, and what to do: Needs attention")
			require.NotContains(t, text(page), "Last error (", "the error is told in the item, not beside the card")
		})
	}
}
