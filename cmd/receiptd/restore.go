package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

func init() {
	commands["restore"] = command{summary: "put a backup or a snapshot back as the database (receiptd stopped), also into an empty data directory; unsent entries come back held", run: runRestore}
}

// restoredMessage is the outcome message of every entry restore holds.
const restoredMessage = "restored from a backup: this entry was not yet sent when the backup was taken, and it may " +
	"have been sent since. Check with the tax service whether it was issued before a retry (receiptd retry -force); " +
	"if it was, do not retry"

func runRestore(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "restore", "restore [-config FILE] FILE")
	cfgPath := fs.String("config", "", "config file naming the data directory (default "+config.DefaultPath()+")")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want the backup or snapshot file to restore")
	}
	lc, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	r, err := restore(ctx, lc.cfg, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "restored %s as %s\n", fs.Arg(0), filepath.Join(lc.cfg.DataDir, store.DBFile))
	if r.keptAs != "" {
		fmt.Fprintf(env.stdout, "the database that was there is kept as %s\n", r.keptAs)
	}
	if r.logKeptAs != "" {
		fmt.Fprintf(env.stdout, "its write-ahead log, which may hold receipts acknowledged just before receiptd stopped, "+
			"could not be applied to it (%v) and is kept as %s\n", r.logErr, r.logKeptAs)
	}
	fmt.Fprintf(env.stdout, "%d entries unsent in the backup are held (receipts) or stopped (deletes): they may have been sent "+
		"since the backup. Check each with the tax service before `receiptd retry -force ID`; "+
		"`receiptd entries -state held` lists them once receiptd runs.\n", r.held)
	return nil
}

// restored is what restore did.
type restored struct {
	held   int    // entries held or stopped
	keptAs string // where the database that was in place went, if any
	// logKeptAs is where the write-ahead log went when its records could
	// not be applied to the database that was in place (logErr says why).
	logKeptAs string
	logErr    error
}

// settleLog empties the data directory's write-ahead log before the
// database it belongs to is set aside: receipts acknowledged just before
// a crash may be only there, so they are applied to that database (kept
// beside the restored one). When that cannot be done (the database is
// missing or damaged) the log is kept under stamp instead, and the reason
// returned as logErr. The restored copy starts a log of its own.
func settleLog(ctx context.Context, dir, stamp string) (keptAs string, logErr, err error) {
	logDir := filepath.Join(dir, daemon.LogDir)
	if n, err := wal.Count(logDir); err != nil || n == 0 {
		if err == nil {
			err = os.RemoveAll(logDir)
		}
		if err != nil {
			return "", nil, fmt.Errorf("restore: %w", err)
		}
		return "", nil, nil
	}
	if logErr = applyLog(ctx, filepath.Join(dir, store.DBFile), logDir); logErr == nil {
		if err := os.RemoveAll(logDir); err != nil {
			return "", nil, fmt.Errorf("restore: remove the applied write-ahead log: %w", err)
		}
		return "", nil, nil
	}
	keptAs = logDir + stamp
	if err := os.Rename(logDir, keptAs); err != nil {
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

// restore puts the backup src in place as the data directory's database.
// The copy is made, checked and changed (unsent entries held, a new
// identity) beside the database under a temporary name, then renamed into
// place; the database it replaces is kept under a dated name. A restore cut
// short leaves the data directory refusing to start (missing or replaced
// database) and can be run again.
func restore(ctx context.Context, cfg config.Config, src string) (restored, error) {
	dir := cfg.DataDir
	db := filepath.Join(dir, store.DBFile)
	if err := refuseIfRunning(ctx, cfg, db); err != nil {
		return restored{}, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return restored{}, fmt.Errorf("restore: %w", err)
	}
	tmp := db + ".restore.tmp"
	_ = os.Remove(tmp) // left by a restore that was killed
	var r restored
	id, tx, err := prepareCopy(ctx, src, tmp, &r)
	if err == nil {
		err = giveToDirOwner(tmp, dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return restored{}, err
	}
	stamp := dated(".before-restore-")
	if r.logKeptAs, r.logErr, err = settleLog(ctx, dir, stamp); err != nil {
		_ = os.Remove(tmp)
		return restored{}, err
	}
	if _, err := os.Stat(db); err == nil {
		r.keptAs = db + stamp
		if err := os.Rename(db, r.keptAs); err != nil {
			return restored{}, fmt.Errorf("restore: keep the current database: %w", err)
		}
	}
	if err := os.Rename(tmp, db); err != nil {
		return restored{}, fmt.Errorf("restore: %w", err)
	}
	if err := fileutil.SyncDir(dir); err != nil {
		return restored{}, fmt.Errorf("restore: %w", err)
	}
	if err := store.WriteMarker(dir, id, tx); err != nil {
		return restored{}, fmt.Errorf("restore: %w", err)
	}
	if err := giveToDirOwner(filepath.Join(dir, store.MarkerFile), dir); err != nil {
		return restored{}, fmt.Errorf("restore: %w", err)
	}
	return r, nil
}

// prepareCopy copies src to tmp and makes the copy a restored database: it
// opens (which checks every page and recovers entries caught sending),
// holds every unsent entry, and takes a new identity. It returns that id
// and the copy's newest transaction, for the marker.
func prepareCopy(ctx context.Context, src, tmp string, r *restored) (string, uint64, error) {
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
	if r.held, err = q.HoldRestored(ctx, restoredMessage); err != nil {
		return "", 0, fmt.Errorf("restore: %w", err)
	}
	if err := q.DetachLog(ctx); err != nil {
		return "", 0, fmt.Errorf("restore: %w", err)
	}
	id := store.NewID()
	if err := st.SetID(ctx, id); err != nil {
		return "", 0, fmt.Errorf("restore: %w", err)
	}
	tx := st.TxID()
	if err := st.Close(); err != nil {
		return "", 0, fmt.Errorf("restore: %w", err)
	}
	return id, tx, nil
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

// refuseIfRunning refuses a restore while a receiptd uses the data
// directory (it holds the database's lock) or answers on the configured
// address (it may run on a database that is no longer in place).
func refuseIfRunning(ctx context.Context, cfg config.Config, db string) error {
	if err := store.ProbeLock(db); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if addr, ok := answersHealthz(ctx, cfg); ok {
		return fmt.Errorf("restore: a receiptd answers at %s: stop it first (receiptd stop)", addr)
	}
	return nil
}

// answersHealthz reports whether a receiptd answers /healthz at the
// configured listen address or Unix socket.
func answersHealthz(ctx context.Context, cfg config.Config) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	tr := &http.Transport{Proxy: nil}
	addr, url := "", ""
	switch {
	case cfg.Listen != "":
		addr = dialable(cfg.Listen)
		url = "http://" + addr + "/healthz"
	case cfg.ListenUnix != "":
		addr, url = cfg.ListenUnix, "http://localhost/healthz"
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", cfg.ListenUnix)
		}
	default:
		return "", false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", false
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", false
	}
	_ = resp.Body.Close()
	return addr, resp.StatusCode == http.StatusOK
}
