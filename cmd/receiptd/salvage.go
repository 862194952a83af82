package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/salvage"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

func init() {
	commands["salvage"] = command{summary: "a new database from what a damaged one still holds (receiptd stopped); unfinished entries come back held",
		run: runSalvage}
}

// salvagedMessage is the outcome message of every unfinished entry salvage
// holds.
const salvagedMessage = "recovered by receiptd salvage from a damaged database: this entry was not finished in what " +
	"could be read, and it may have been sent since, or its last attempt may have reached the tax service. Check with " +
	"the tax service whether it was issued before a retry (receiptd retry -force); if it was, do not retry"

func runSalvage(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "salvage", "salvage [-config FILE]")
	cfgPath := fs.String("config", "", "config file naming the data directory (default "+config.DefaultPath()+")")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	lc, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	// Salvage holds every recovered entry in memory at once (a few hundred
	// bytes to a few KiB each); the daemon's soft limit (gc.go) would make
	// the collector run without end, 80% of salvage's CPU at 80,000
	// entries. A one-off, stopped-daemon tool may use what it needs.
	debug.SetMemoryLimit(math.MaxInt64)
	r, err := salvageDir(ctx, lc.cfg)
	if err != nil {
		return err
	}
	printSalvaged(env.stdout, lc.cfg.DataDir, r)
	return nil
}

// salvaged is what salvageDir did.
type salvaged struct {
	read          salvage.Report
	entries       int
	held          int // unfinished entries held or stopped
	counts        map[queue.State]int
	keptAs        string // where the damaged database went ("" when there was none)
	logKeptAs     string // where its write-ahead log went ("" when there was none)
	dbMissing     bool
	sequence      uint64
	sequenceKnown bool
}

// salvageDir rebuilds the data directory's database from what the damaged
// one and its write-ahead log still hold. The new database is written and
// changed (unfinished entries held, a new identity) beside the damaged one
// under a temporary name; then the damaged file and the log are set aside
// under dated names, the new file renamed into place and the marker
// written. A salvage cut short leaves the damaged file where it was, or a
// data directory whose database is missing (refused at start), and can be
// run again.
func salvageDir(ctx context.Context, cfg config.Config) (salvaged, error) {
	dir := cfg.DataDir
	db := filepath.Join(dir, store.DBFile)
	logDir := filepath.Join(dir, daemon.LogDir)
	if err := refuseSalvageIfRunning(ctx, cfg, db); err != nil {
		return salvaged{}, err
	}
	rec, r, err := readDamaged(db, logDir)
	if err != nil {
		return salvaged{}, err
	}
	tmp := db + ".salvage.tmp"
	_ = os.Remove(tmp) // left by a salvage that was killed
	id, tx, err := writeSalvaged(ctx, tmp, rec, &r)
	if err == nil {
		err = giveToDirOwner(tmp, dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return salvaged{}, err
	}
	stamp := dated(".damaged-")
	for _, p := range []struct {
		path string
		kept *string
	}{{db, &r.keptAs}, {logDir, &r.logKeptAs}} {
		if _, err := os.Stat(p.path); err == nil {
			*p.kept = p.path + stamp
			if err := os.Rename(p.path, *p.kept); err != nil {
				return salvaged{}, fmt.Errorf("salvage: keep %s: %w", p.path, err)
			}
		}
	}
	if err := os.Rename(tmp, db); err != nil {
		return salvaged{}, fmt.Errorf("salvage: %w", err)
	}
	if err := fileutil.SyncDir(dir); err != nil {
		return salvaged{}, fmt.Errorf("salvage: %w", err)
	}
	if err := store.WriteMarker(dir, id, tx); err != nil {
		return salvaged{}, fmt.Errorf("salvage: %w", err)
	}
	if err := giveToDirOwner(filepath.Join(dir, store.MarkerFile), dir); err != nil {
		return salvaged{}, fmt.Errorf("salvage: %w", err)
	}
	return r, nil
}

// refuseSalvageIfRunning refuses while a receiptd holds the database or
// answers on the configured address.
func refuseSalvageIfRunning(ctx context.Context, cfg config.Config, db string) error {
	if err := store.ProbeLock(db); err != nil {
		return fmt.Errorf("salvage: %w", err)
	}
	if addr, ok := answersHealthz(ctx, cfg); ok {
		return fmt.Errorf("salvage: a receiptd answers at %s: stop it first (receiptd stop)", addr)
	}
	return nil
}

// readDamaged reads what the database file and the log beside it hold.
// It refuses (nothing changed) when neither gives anything to go on.
func readDamaged(db, logDir string) (*salvage.DB, salvaged, error) {
	var r salvaged
	f, err := os.Open(db)
	var size int64
	var src io.ReaderAt = strings.NewReader("")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.dbMissing = true
	case err != nil:
		return nil, r, fmt.Errorf("salvage: %w", err)
	default:
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, r, fmt.Errorf("salvage: %w", err)
		}
		src, size = f, fi.Size()
	}
	rec, err := salvage.Read(src, size)
	if err != nil {
		return nil, r, fmt.Errorf("salvage %s: %w", db, err)
	}
	segs, err := wal.Scan(logDir)
	if err != nil {
		return nil, r, fmt.Errorf("salvage: %w", err)
	}
	rec.AddLog(segs)
	if rec.Meta < 0 && rec.FromScan == 0 && rec.FromLog == 0 {
		return nil, r, fmt.Errorf("salvage %s: nothing could be read from it (no valid meta page, no entry on any page) "+
			"nor from the write-ahead log %s; nothing was changed: restore a backup with `receiptd restore FILE`", db, logDir)
	}
	return rec, r, nil
}

// writeSalvaged writes the recovered entries into a new database at tmp,
// holds the unfinished ones, and gives it a new identity; it returns that
// id and the file's newest transaction, for the marker.
func writeSalvaged(ctx context.Context, tmp string, rec *salvage.DB, r *salvaged) (string, uint64, error) {
	entries := rec.Entries()
	r.entries, r.sequence, r.sequenceKnown = len(entries), rec.Sequence, rec.SequenceKnown
	st, err := store.Open(tmp, store.Options{LockTimeout: -1, InitialMmapSize: -1})
	if err != nil {
		return "", 0, fmt.Errorf("salvage: %w", err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err == nil {
		err = q.Rebuild(ctx, entries, rec.Sequence)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, fmt.Errorf("salvage: %w", err)
	}
	r.read = rec.Report
	// Opened again as the daemon opens it: entries caught sending are
	// recovered as after a crash, then every unfinished one is held.
	if st, err = store.Open(tmp, store.Options{LockTimeout: -1, InitialMmapSize: -1, Existing: true}); err != nil {
		return "", 0, fmt.Errorf("salvage: the new database: %w", err)
	}
	defer st.Close()
	if q, err = queue.Open(ctx, st, queue.Options{}); err != nil {
		return "", 0, fmt.Errorf("salvage: the new database: %w", err)
	}
	if r.held, err = q.HoldRestored(ctx, salvagedMessage); err != nil {
		return "", 0, fmt.Errorf("salvage: %w", err)
	}
	if r.counts, err = q.Counts(); err != nil {
		return "", 0, fmt.Errorf("salvage: %w", err)
	}
	id := store.NewID()
	if err := st.SetID(ctx, id); err != nil {
		return "", 0, fmt.Errorf("salvage: %w", err)
	}
	tx := st.TxID()
	if err := st.Close(); err != nil {
		return "", 0, fmt.Errorf("salvage: %w", err)
	}
	return id, tx, nil
}

func printSalvaged(w io.Writer, dir string, r salvaged) {
	rep := r.read
	db := filepath.Join(dir, store.DBFile)
	fmt.Fprintf(w, "salvaged into a new database %s\n", db)
	if r.keptAs != "" {
		fmt.Fprintf(w, "the damaged database is kept as %s\n", r.keptAs)
	}
	if r.logKeptAs != "" {
		fmt.Fprintf(w, "its write-ahead log is kept as %s\n", r.logKeptAs)
	}
	switch {
	case r.dbMissing:
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
		r.entries, rep.FromTree, rep.FromScan, rep.FromLog)
	fmt.Fprintf(w, "by state now: %s\n", countsText(r.counts))
	seq := "unknown (the entries bucket's header was lost): continues after the highest entry read"
	if r.sequenceKnown {
		seq = "read from the database"
	}
	fmt.Fprintf(w, "queueIds continue after %s (%s)\n", queue.FormatID(r.sequence), seq)
	fmt.Fprintf(w, "not recovered: %d records that did not decode; %d pages of the tree unreadable; %d idempotency keys "+
		"whose entry is lost (a POS retry under one of them is taken as a new receipt)\n",
		rep.Undecodable, rep.Unreadable, rep.OrphanKeys)
	if rep.BadBody > 0 {
		fmt.Fprintf(w, "%d recovered receipts have a body that does not match its hash: they are kept, and never sent\n", rep.BadBody)
	}
	fmt.Fprintf(w, "%d unfinished entries are held (receipts) or stopped (deletes): they may have been sent. Check each with "+
		"the tax service before `receiptd retry -force ID`; `receiptd entries -state held` lists them once receiptd runs.\n", r.held)
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
