package datadir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/salvage"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

// salvagedMessage is the outcome message of every unfinished entry salvage
// holds.
const salvagedMessage = "recovered by receiptd salvage from a damaged database: this entry was not finished in what " +
	"could be read, and it may have been sent since, or its last attempt may have reached the tax service. Check with " +
	"the tax service whether it was issued before a retry (receiptd retry -force); if it was, do not retry"

// Salvaged is what Salvage did.
type Salvaged struct {
	Read          salvage.Report
	Entries       int                 // entries recovered
	Held          int                 // unfinished entries held or stopped
	Counts        map[queue.State]int // the new database's entries by state
	KeptAs        string              // where the damaged database went ("" when there was none)
	LogKeptAs     string              // where its write-ahead log went ("" when there was none)
	DBMissing     bool                // there was no database file: only the log was read
	Sequence      uint64              // queueIds continue after this one
	SequenceKnown bool                // Sequence was read from the file, not taken from the highest entry
}

// Salvage rebuilds the data directory's database from what the damaged
// one and its write-ahead log still hold (receiptd stopped). The new
// database is written and changed (unfinished entries held, a new
// identity) beside the damaged one under a temporary name; then the
// damaged file and the log are set aside under dated names, the new file
// renamed into place and the marker written. A salvage cut short leaves
// the damaged file where it was, or a data directory whose database is
// missing (refused at start), and can be run again.
func Salvage(ctx context.Context, cfg config.Config) (Salvaged, error) {
	dir := cfg.DataDir
	db := layout.DB(dir)
	logDir := layout.WAL(dir)
	if err := refuseIfRunning(ctx, "salvage", cfg, db); err != nil {
		return Salvaged{}, err
	}
	rec, r, err := readDamaged(db, logDir)
	if err != nil {
		return Salvaged{}, err
	}
	tmp := filepath.Join(dir, layout.SalvageTemp)
	id, tx, err := build(tmp, dir, func() (string, uint64, error) { return writeSalvaged(ctx, tmp, rec, &r) })
	if err != nil {
		return Salvaged{}, err
	}
	err = swapIn("salvage", dir, tmp, id, tx, layout.KeptSuffix(layout.Damaged, time.Now()), aside{db, &r.KeptAs}, aside{logDir, &r.LogKeptAs})
	if err != nil {
		return Salvaged{}, err
	}
	return r, nil
}

// readDamaged reads what the database file and the log beside it hold.
// It refuses (nothing changed) when neither gives anything to go on.
func readDamaged(db, logDir string) (*salvage.DB, Salvaged, error) {
	var r Salvaged
	f, err := os.Open(db)
	var size int64
	var src io.ReaderAt = strings.NewReader("")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.DBMissing = true
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
func writeSalvaged(ctx context.Context, tmp string, rec *salvage.DB, r *Salvaged) (string, uint64, error) {
	entries := rec.Entries()
	r.Entries, r.Sequence, r.SequenceKnown = len(entries), rec.Sequence, rec.SequenceKnown
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
	r.Read = rec.Report
	// Opened again as the daemon opens it: entries caught sending are
	// recovered as after a crash, then every unfinished one is held.
	if st, err = store.Open(tmp, store.Options{LockTimeout: -1, InitialMmapSize: -1, Existing: true}); err != nil {
		return "", 0, fmt.Errorf("salvage: the new database: %w", err)
	}
	defer st.Close()
	if q, err = queue.Open(ctx, st, queue.Options{}); err != nil {
		return "", 0, fmt.Errorf("salvage: the new database: %w", err)
	}
	if r.Held, err = q.HoldRestored(ctx, salvagedMessage); err != nil {
		return "", 0, fmt.Errorf("salvage: %w", err)
	}
	if r.Counts, err = q.Counts(); err != nil {
		return "", 0, fmt.Errorf("salvage: %w", err)
	}
	return newIdentity(ctx, "salvage", st)
}
