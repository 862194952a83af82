package datadir

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/salvage"
)

// WriteReport tells an operator what Restore did with the backup src in
// the data directory dir, and what to check next.
func (r Restored) WriteReport(w io.Writer, src, dir string) {
	fmt.Fprintf(w, "restored %s as %s\n", src, layout.DB(dir))
	if r.KeptAs != "" {
		fmt.Fprintf(w, "the database that was there is kept as %s\n", r.KeptAs)
	}
	if r.LogKeptAs != "" {
		fmt.Fprintf(w, "its write-ahead log, which may hold receipts acknowledged just before receiptd stopped, "+
			"could not be applied to it (%v) and is kept as %s\n", r.LogErr, r.LogKeptAs)
	}
	fmt.Fprintf(w, "%d entries unsent in the backup are held (receipts) or stopped (deletes): they may have been sent "+
		"since the backup. Check each with the tax service before `receiptd retry -force ID`; "+
		"`receiptd entries -state held` lists them once receiptd runs.\n", r.Held)
}

// WriteReport tells an operator what Salvage did to the data directory
// dir: what it read, recovered and lost, and what to check next.
func (r Salvaged) WriteReport(w io.Writer, dir string) {
	rep := r.Read
	db := layout.DB(dir)
	fmt.Fprintf(w, "salvaged into a new database %s\n", db)
	if r.KeptAs != "" {
		fmt.Fprintf(w, "the damaged database is kept as %s\n", r.KeptAs)
	}
	if r.LogKeptAs != "" {
		fmt.Fprintf(w, "its write-ahead log is kept as %s\n", r.LogKeptAs)
	}
	switch {
	case r.DBMissing:
		fmt.Fprintf(w, "database: missing; only the write-ahead log was read\n")
	case rep.Meta < 0:
		fmt.Fprintf(w, "database: %d pages; neither meta page holds, so every page was scanned\n", rep.Pages)
	default:
		fmt.Fprintf(w, "database: %d pages of %d bytes, meta page %d (transaction %d); %d pages read through the tree, "+
			"%d unreadable; %d key ranges of entries lost from the tree, %d leaf pages outside it scanned for them; "+
			"freelist: %s\n", rep.Pages, rep.PageSize, rep.Meta, rep.TxID, rep.TreePages, rep.Unreadable,
			rep.LostRanges, rep.Scanned, freelistText(rep))
	}
	fmt.Fprintf(w, "write-ahead log: %d segments (%d with a damaged header, %d of another database), %d records read, "+
		"%d of them not decodable, %d receipts only there\n", rep.LogSegments, rep.LogDamaged, rep.LogForeign,
		rep.LogRecords, rep.LogUndecodable, rep.FromLog)
	fmt.Fprintf(w, "recovered %d entries: %d through the tree, %d from pages outside it, %d from the write-ahead log\n",
		r.Entries, rep.FromTree, rep.FromScan, rep.FromLog)
	fmt.Fprintf(w, "by state now: %s\n", countsText(r.Counts))
	seq := "unknown (the entries bucket's header was lost): continues after the highest entry read"
	if r.SequenceKnown {
		seq = "read from the database"
	}
	fmt.Fprintf(w, "queueIds continue after %s (%s)\n", queue.FormatID(r.Sequence), seq)
	fmt.Fprintf(w, "not recovered: %d records that did not decode; %d pages of the tree unreadable; %d idempotency keys "+
		"whose entry is lost (a POS retry under one of them is taken as a new receipt)\n",
		rep.Undecodable, rep.Unreadable, rep.OrphanKeys)
	if rep.BadBody > 0 {
		fmt.Fprintf(w, "%d recovered receipts have a body that does not match its hash: they are kept, and never sent\n", rep.BadBody)
	}
	fmt.Fprintf(w, "%d unfinished entries are held (receipts) or stopped (deletes): they may have been sent. Check each with "+
		"the tax service before `receiptd retry -force ID`; `receiptd entries -state held` lists them once receiptd runs.\n", r.Held)
}

func freelistText(rep salvage.Report) string {
	if !rep.FreelistOK {
		return "unreadable (pages outside the tree are not told apart from freed ones)"
	}
	return fmt.Sprintf("%d free pages", rep.FreePages)
}

func countsText(c map[queue.State]int) string {
	var parts []string
	for s, n := range c {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
