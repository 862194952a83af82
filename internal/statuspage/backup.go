package statuspage

import (
	"time"
)

// Backup is the [backup] snapshot loop's state for the page; nil in Data
// means snapshots are off.
type Backup struct {
	Dir         string
	LastSuccess time.Time // zero: no good snapshot since start
	LastFile    string    // the newest good snapshot
	LastError   string    // why the last one failed; empty when it worked
	LastErrorAt time.Time
	Next        time.Time // when the next one is due; zero: unknown
}

// backupView is the "Snapshots" block of the page.
type backupView struct {
	Level, Symbol, Text, Detail string
}

func backupOf(d Data) backupView {
	b := d.Backup
	if b == nil {
		// A choice made at install, not a problem: many tills have no
		// second disk, and a card that never clears would teach a person
		// to skip Needs attention (and keep alert at warn for good).
		return backupView{Level: levelQuiet, Symbol: "–",
			Text:   "Snapshots are off ([backup] dir is not set): receipts not yet sent are kept on this disk only, until the tax service accepts them.",
			Detail: "To keep a copy elsewhere, set [backup] dir to a second disk, a USB stick or a network share, then restart receiptd."}
	}
	next := ""
	if !b.Next.IsZero() {
		next = " Next: " + clock(b.Next, d.Now) + "."
	}
	switch {
	case b.LastError != "":
		return backupView{Level: levelWarn, Symbol: "⚠", Text: "The last snapshot failed (" + ago(b.LastErrorAt, d.Now) + "); see Needs attention.",
			Detail: "Snapshots go to " + b.Dir + "." + next}
	case b.LastSuccess.IsZero():
		return backupView{Level: levelOK, Symbol: "…", Text: "No snapshot yet since start; they go to " + b.Dir + "." + next}
	}
	return backupView{Level: levelOK, Symbol: "✓", Text: "Last snapshot " + ago(b.LastSuccess, d.Now) + ", written and checked: " + b.LastFile + ".",
		Detail: next[min(len(next), 1):]}
}

// backupItem is the attention item of a failing snapshot.
func backupItem(d Data) (attentionItem, bool) {
	b := d.Backup
	if b == nil || b.LastError == "" {
		return attentionItem{}, false
	}
	last := "No snapshot has worked since receiptd started."
	if !b.LastSuccess.IsZero() {
		last = "The newest good snapshot is " + ago(b.LastSuccess, d.Now) + ": " + b.LastFile + "."
	}
	return attentionItem{
		ID: "backup", Level: levelWarn, Symbol: "⚠",
		Title:   "The last snapshot failed: the copy of the database on " + b.Dir + " is getting old",
		Why:     "Receipts are still accepted and sent; but if this disk fails, the receipts not yet sent are only in the snapshots. The failed snapshot was deleted. " + last,
		Problem: plain(b.LastError), Raw: b.LastError, RawAt: ago(b.LastErrorAt, d.Now),
		Steps: []step{
			{Text: "Check that " + b.Dir + " is mounted, is a directory receiptd may write to, and has room; it is tried again within a minute."},
			{Text: "If it keeps failing, take a copy by hand to another place:", Command: "receiptd backup FILE"},
			logStep(d),
		},
	}, true
}
