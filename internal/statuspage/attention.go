package statuspage

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// attentionEntries is how many entries each attention item lists; the
// rest are in the failures table further down.
const attentionEntries = 3

// attentionItem is one thing a person has to act on, with what it means
// and the next steps, in the order to take them.
type attentionItem struct {
	ID, Level, Symbol, Title, Why string
	// Problem is the cause in a person's words; Raw the text behind it
	// (shown behind a details element) and RawAt when it happened.
	Problem, Raw, RawAt string
	Steps               []step
	Entries             []failureRow
	More                int
}

// step is one next step: words, and the exact command when there is one.
type step struct{ Text, Command string }

// hostOS decides the commands the page gives (a variable so tests can
// render the other system's).
var hostOS = runtime.GOOS

// logStep says where receiptd's log is and how to read its end: log.file
// when set; the terminal receiptd runs in (run in the foreground, demo);
// else the service manager's journal (zero Data: a service's defaults).
func logStep(d Data) step {
	const text = "receiptd's log says what each attempt got:"
	switch {
	case d.LogFile != "" && hostOS == "windows":
		return step{Text: text, Command: "Get-Content " + d.LogFile + " -Tail 50"}
	case d.LogFile != "":
		return step{Text: text, Command: "tail -n 50 " + d.LogFile}
	case d.LogTerminal:
		return step{Text: "receiptd's log is the terminal window it runs in (receiptd run, receiptd demo): its last lines say what each attempt got."}
	case hostOS == "windows":
		return step{
			Text:    "receiptd's log says what each attempt got (service start and stop are in Event Viewer, Application log):",
			Command: `Get-Content C:\ProgramData\receiptd\logs\receiptd.log -Tail 50`,
		}
	}
	return step{Text: text, Command: "journalctl -u receiptd -n 50"}
}

// dirOf is the folder of a database path, in hostOS's separators (a Unix
// path keeps its slashes even when the page is rendered on Windows).
func dirOf(p string) string {
	if hostOS == "windows" {
		return filepath.Dir(p)
	}
	return path.Dir(p)
}

// freeSpaceCommand shows the free space of the disk holding dir.
func freeSpaceCommand(dir string) string {
	if hostOS == "windows" {
		drive := strings.TrimSuffix(filepath.VolumeName(dir), ":")
		if drive == "" {
			drive = "C"
		}
		return "Get-PSDrive " + drive
	}
	return "df -h " + dir
}

// attention lists what needs a person, the most urgent first: what stops
// receipts from being stored, then what stops them from being sent, then
// entries waiting for a decision.
func attention(d Data, waiting int, failures []failureRow) []attentionItem {
	var items []attentionItem
	if d.DatabaseFailed != "" {
		items = append(items, databaseItem(d))
	}
	if d.DiskFull != "" {
		items = append(items, diskFullItem(d))
	}
	if !d.UpstreamUp {
		items = append(items, upstreamItem(d))
	}
	if d.Alert == AlertCritical {
		items = append(items, ageingItem(d, waiting))
	}
	items = append(items, posapiItems(d)...)
	for _, s := range []string{"held", "rejected", "payment", "delete_rejected"} {
		if n := d.Counts[s]; n > 0 {
			items = append(items, entriesItem(s, n, failures))
		}
	}
	if d.Alert == AlertWarn {
		items = append(items, ageingItem(d, waiting))
	}
	if it, ok := backupItem(d); ok {
		items = append(items, it)
	}
	if it, ok := controlItem(d); ok {
		items = append(items, it)
	}
	if it, ok := updateItem(d); ok {
		items = append(items, it)
	}
	// The critical ones first, each level in the order above: a tax
	// service out of reach for a minute (a warning) does not lead over an
	// empty lottery reserve.
	slices.SortStableFunc(items, func(a, b attentionItem) int {
		return cmp.Compare(levelRank(a.Level), levelRank(b.Level))
	})
	return items
}

// levelRank orders levels most urgent first.
func levelRank(level string) int {
	if level == levelCritical {
		return 0
	}
	return 1
}

func databaseItem(d Data) attentionItem {
	return attentionItem{
		ID: "database", Level: levelCritical, Symbol: "✗",
		Title:   "The database refuses writes: new receipts cannot be stored",
		Why:     "receiptd cannot safely write to its database while running, so the POS gets an error for every new receipt. What was stored before is kept in the database file.",
		Problem: plain(d.DatabaseFailed),
		Raw:     d.DatabaseFailed,
		Steps: []step{
			{Text: "If the database file was moved or replaced, put the right file back at " + orUnknown(d.DatabasePath) + "."},
			{Text: "Restart receiptd; it reopens the database and checks it:", Command: "receiptd restart"},
			{Text: "If it fails again, check the disk's health and the system log, then receiptd's log. " + logStep(d).Text, Command: logStep(d).Command},
		},
	}
}

func diskFullItem(d Data) attentionItem {
	dir := "the data directory"
	if d.DatabasePath != "" {
		dir = dirOf(d.DatabasePath)
	}
	it := attentionItem{
		ID: "disk", Level: levelCritical, Symbol: "✗",
		Title:   "The disk is full: new receipts cannot be stored",
		Why:     "The POS gets an error (507) for every new receipt until there is room. Receipts already stored are safe and are still sent.",
		Problem: plain(d.DiskFull),
		Raw:     d.DiskFull, RawAt: ago(d.DiskFullSince, d.Now),
		Steps: []step{
			{Text: "Free space on the disk that holds " + dir + ":", Command: freeSpaceCommand(dir)},
			{Text: "Nothing else is needed: the next receipt is stored as soon as there is room."},
		},
	}
	return it
}

// outageCritical is whether the tax service has been out of reach for
// longer than d.OutageCritical; an outage of unknown start counts as long.
func outageCritical(d Data) bool {
	return d.UpstreamSince.IsZero() || d.Now.Sub(d.UpstreamSince) >= d.OutageCritical
}

func upstreamItem(d Data) attentionItem {
	title := "The tax service cannot be reached"
	if !d.UpstreamSince.IsZero() {
		title += " (for " + human(d.Now.Sub(d.UpstreamSince)) + ")"
	}
	level, symbol := levelCritical, "✗"
	why := "Sales can go on: receipts are stored here and sent as soon as it answers again."
	if !outageCritical(d) {
		level, symbol = levelWarn, "⚠"
		why += " Short outages usually end by themselves: this becomes critical after " +
			threshold(d.OutageCritical) + " (alerts.outage_critical_after)."
	}
	return attentionItem{
		ID: "upstream", Level: level, Symbol: symbol, Title: title,
		Why:     why,
		Problem: plain(d.LastError), Raw: d.LastError, RawAt: ago(d.LastErrorAt, d.Now),
		Steps: []step{
			{Text: "Check this computer's network connection."},
			{Text: "Check that PosAPI is running and answers at the address in upstream.base_url of receiptd's configuration."},
			logStep(d),
		},
	}
}

func ageingItem(d Data, waiting int) attentionItem {
	it := attentionItem{ID: "ageing", Level: levelWarn, Symbol: "⚠"}
	key, limit := "alerts.unsent_warn", d.UnsentWarn
	if d.Alert == AlertCritical {
		it.Level, it.Symbol = levelCritical, "✗"
		key, limit = "alerts.unsent_critical", d.UnsentCritical
	}
	it.Title = fmt.Sprintf("The oldest unsent receipt is %s old, past %s (%s)", human(d.OldestUnsentAge), threshold(limit), key)
	it.Why = "Receipts have to reach the tax service in time; this one has waited longer than the limit set in receiptd's configuration."
	switch {
	case !d.UpstreamUp:
		it.Steps = []step{{Text: "Bring the tax service back within reach (its own item here says how); the queue is sent as soon as it answers."}}
	case waiting == 0:
		// Held entries count as unsent (refused and payment ones do not).
		it.Steps = []step{{Text: "Nothing is waiting to be sent: the oldest unsent receipts are the held ones, waiting for a person (their own item here). Settle those and this clears."}}
	default:
		it.Steps = []step{{Text: "The tax service answers, so something holds the oldest receipts back; list them and read their last attempt:", Command: "receiptd entries -state queued -limit 5"}, logStep(d)}
	}
	return it
}

// entriesItem is the item for n entries in a state that needs a decision.
func entriesItem(state string, n int, failures []failureRow) attentionItem {
	it := attentionItem{ID: state, Level: levelWarn, Symbol: "⚠"}
	for _, f := range failures {
		if f.State != state {
			continue
		}
		if len(it.Entries) < attentionEntries {
			it.Entries = append(it.Entries, f)
		}
	}
	it.More = max(n-len(it.Entries), 0)
	example := "Q…"
	if len(it.Entries) > 0 {
		example = it.Entries[0].QueueID
	}
	switch state {
	case "held":
		it.Title = count(n, "receipt held", "receipts held") + ": check before sending again"
		it.Why = pick(n, "receiptd cannot tell whether the tax service may already have issued it:",
			"receiptd cannot tell whether the tax service may already have issued them:") +
			" an answer was lost, the receipt came back from a backup, or its stored copy is damaged (the message below says which)." +
			" Sending again without checking could register the same sale twice."
		it.Steps = []step{
			{Text: "Look each one up at the tax service (its portal, or PosAPI's receipt list) by bill number and date."},
			{Text: "Not there: send it again, deliberately:", Command: "receiptd retry -force " + example},
			{Text: "There: do not send it again; the sale is registered."},
		}
	case "rejected":
		it.Title = count(n, "receipt refused", "receipts refused") + " by the tax service"
		it.Why = pick(n, "It is", "They are") + " not registered. The tax service's message says what to correct."
		it.Steps = []step{
			{Text: "Correct the sale in the POS and send it again with the same bill number: receiptd replaces the refused receipt with the corrected one."},
			{Text: "If the cause was on the tax service's side and is fixed now (say, the merchant is registered), send it unchanged:", Command: "receiptd retry " + example},
		}
	case "payment":
		it.Title = count(n, "receipt", "receipts") + " with the payment not settled (PAYMENT)"
		it.Why = "The tax service recorded " + pick(n, "it", "them") + ", but says the payment is not settled."
		it.Steps = []step{
			{Text: "Once the payment is settled, send it again (the tax service then issues a new receipt id):", Command: "receiptd retry " + example},
		}
	default:
		it.Title = count(n, "deletion refused", "deletions refused") + " by the tax service"
		it.Why = pick(n, "The receipt it was meant to delete stays registered.", "The receipts they were meant to delete stay registered.")
		it.Steps = []step{{Text: "Read the tax service's message below, correct the cause, and delete the receipt again from the POS."}}
	}
	return it
}

func orUnknown(path string) string {
	if path == "" {
		return "its path"
	}
	return path
}

// pick is one when n is 1, many otherwise.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ago writes when t was, for a past event: "14:02:11 UTC, 25m ago";
// "time unknown" for the zero time.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "time unknown"
	}
	return clock(t, now) + ", " + human(now.Sub(t)) + " ago"
}
