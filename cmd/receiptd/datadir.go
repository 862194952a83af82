package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/datadir"
	"github.com/receiptd/receiptd/internal/layout"
)

// The commands that change a data directory, or write a copy of its
// database, as a whole (internal/datadir).

func init() {
	commands["restore"] = command{summary: "put a backup or a snapshot back as the database (receiptd stopped), also into an empty data directory; unsent entries come back held", run: runRestore}
	commands["backup"] = command{summary: "write a consistent copy of the database to FILE", run: runBackup}
	commands["salvage"] = command{summary: "a new database from what a damaged one still holds (receiptd stopped); unfinished entries come back held",
		run: runSalvage}
}

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
	r, err := datadir.Restore(ctx, lc.cfg, fs.Arg(0))
	if err != nil {
		return err
	}
	r.WriteReport(env.stdout, fs.Arg(0), lc.cfg.DataDir)
	return nil
}

func runSalvage(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "salvage", "salvage [-config FILE] [-force]")
	cfgPath := fs.String("config", "", "config file naming the data directory (default "+config.DefaultPath()+")")
	force := fs.Bool("force", false, "salvage even a database that opens and checks clean (it is set aside all the same)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	lc, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if !*force && datadir.CheckClean(lc.cfg.DataDir) == nil {
		return usageError{err: fmt.Errorf("%s opens and checks clean: it is not damaged, so nothing was changed "+
			"(salvage would set this good file aside). If receiptd refuses to start, its message says why "+
			"(receiptd run -config FILE); to salvage anyway, pass -force", layout.DB(lc.cfg.DataDir))}
	}
	// Salvage holds every recovered entry in memory at once (a few hundred
	// bytes to a few KiB each); the daemon's soft limit (gc.go) would make
	// the collector run without end, 80% of salvage's CPU at 80,000
	// entries. A one-off, stopped-daemon tool may use what it needs.
	debug.SetMemoryLimit(math.MaxInt64)
	r, err := datadir.Salvage(ctx, lc.cfg)
	if err != nil {
		return err
	}
	r.WriteReport(env.stdout, lc.cfg.DataDir)
	return nil
}

func runBackup(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "backup", "backup [-addr URL] [-token T] [-force] FILE")
	var df daemonFlags
	df.register(fs)
	force := fs.Bool("force", false, "overwrite FILE if it exists")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want the file to write the backup to")
	}
	path := fs.Arg(0)
	if err := datadir.RemovePartial(path); err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil && !*force {
		return usagef("%s exists: pass -force to overwrite it, or choose another file", path)
	}
	c, err := df.client()
	if err != nil {
		return err
	}
	n, err := datadir.Backup(ctx, path, func() (io.ReadCloser, error) {
		resp, err := c.Do(ctx, "GET", "/receiptd/backup")
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "backup written and checked: %s (%d bytes)\n", path, n)
	return nil
}
