package datadir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

// restoredMessage is the outcome message of every entry restore holds.
const restoredMessage = "restored from a backup: this entry was not yet sent when the backup was taken, and it may " +
	"have been sent since. Check with the tax service whether it was issued before a retry (receiptd retry -force); " +
	"if it was, do not retry"

// Restored is what Restore did.
type Restored struct {
	Held   int    // entries held or stopped
	KeptAs string // where the database that was in place went, if any
	// LogKeptAs is where the write-ahead log went when its records could
	// not be applied to the database that was in place (LogErr says why).
	LogKeptAs string
	LogErr    error
}

// settleLog empties the data directory's write-ahead log before the
// database it belongs to is set aside: receipts acknowledged just before
// a crash may be only there, so they are applied to that database (kept
// beside the restored one). When that cannot be done (the database is
// missing or damaged) the log is kept under stamp instead, and the reason
// returned as logErr. The restored copy starts a log of its own.
func settleLog(ctx context.Context, dir, stamp string) (keptAs string, logErr, err error) {
	logDir := layout.WAL(dir)
	if n, err := wal.Count(logDir); err != nil || n == 0 {
		if err == nil {
			err = os.RemoveAll(logDir)
		}
		if err != nil {
			return "", nil, fmt.Errorf("restore: %w", err)
		}
		return "", nil, nil
	}
	if logErr = applyLog(ctx, layout.DB(dir), logDir); logErr == nil {
		if err := os.RemoveAll(logDir); err != nil {
			return "", nil, fmt.Errorf("restore: remove the applied write-ahead log: %w", err)
		}
		return "", nil, nil
	}
	keptAs = logDir + stamp
	if err := fileutil.Rename(logDir, keptAs); err != nil {
		return "", nil, fmt.Errorf("restore: keep the write-ahead log: %w", err)
	}
	return keptAs, logErr, nil
}

// applyLog applies the log's records to the database db by opening it as
// the daemon does and closing it.
func applyLog(ctx context.Context, db, logDir string) error {
	st, err := store.Open(db, store.Options{LockTimeout: -1, Existing: true})
	if err != nil {
		return err
	}
	q, err := queue.Open(ctx, st, queue.Options{LogDir: logDir})
	if err == nil {
		err = q.Close(ctx)
	}
	return errors.Join(err, st.Close())
}

// Restore puts the backup src in place as the data directory's database
// (receiptd stopped). The copy is made, checked and changed (unsent
// entries held, a new identity) beside the database under a temporary
// name, then renamed into place; the database it replaces is kept under a
// dated name. A restore cut short leaves the data directory refusing to
// start (missing or replaced database) and can be run again.
func Restore(ctx context.Context, cfg config.Config, src string) (Restored, error) {
	dir := cfg.DataDir
	db := layout.DB(dir)
	if err := refuseIfRunning(ctx, "restore", cfg, db); err != nil {
		return Restored{}, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Restored{}, fmt.Errorf("restore: %w", err)
	}
	tmp := filepath.Join(dir, layout.RestoreTemp)
	var r Restored
	id, tx, err := build(tmp, dir, func() (string, uint64, error) { return prepareCopy(ctx, src, tmp, &r) })
	if err != nil {
		return Restored{}, err
	}
	stamp := layout.KeptSuffix(layout.BeforeRestore, time.Now())
	if r.LogKeptAs, r.LogErr, err = settleLog(ctx, dir, stamp); err != nil {
		_ = os.Remove(tmp)
		return Restored{}, err
	}
	if err := swapIn("restore", dir, tmp, id, tx, stamp, aside{db, &r.KeptAs}); err != nil {
		return Restored{}, err
	}
	return r, nil
}

// prepareCopy copies src to tmp and makes the copy a restored database: it
// opens (which checks every page and recovers entries caught sending),
// holds every unsent entry, and takes a new identity. It returns that id
// and the copy's newest transaction, for the marker.
func prepareCopy(ctx context.Context, src, tmp string, r *Restored) (string, uint64, error) {
	if err := copySynced(src, tmp); err != nil {
		return "", 0, err
	}
	// Existing: an empty file (a backup whose copy failed) or another
	// program's bbolt file would otherwise become a new, empty queue.
	st, err := store.Open(tmp, store.Options{LockTimeout: -1, InitialMmapSize: -1, Existing: true})
	if err != nil {
		return "", 0, fmt.Errorf("restore: the backup %s does not open: %w", src, err)
	}
	defer st.Close()
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		return "", 0, fmt.Errorf("restore: the backup %s: %w", src, err)
	}
	if r.Held, err = q.HoldRestored(ctx, restoredMessage); err != nil {
		return "", 0, fmt.Errorf("restore: %w", err)
	}
	if err := q.DetachLog(ctx); err != nil {
		return "", 0, fmt.Errorf("restore: %w", err)
	}
	return newIdentity(ctx, "restore", st)
}

// copySynced copies src to dst and fsyncs dst.
func copySynced(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: copy %s to %s: %w", src, dst, err)
	}
	return nil
}
