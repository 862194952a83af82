package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/harness"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
)

// The year on a till: a step of its own, run alone with -year N.
var (
	yearN    = flag.Int("year", 0, "run only the year-on-a-till step with N receipts posted and finished (1000000 for the full year; 0: the usual run)")
	yearKeep = flag.Duration("year-keep", time.Minute, "retention.keep during the year step (pruning runs every sixth of it)")
)

// Targets of the year step.
const (
	yearAcceptRatio = 1.2 // accept p50 on the year's database, times the empty one's
	yearFileRatio   = 2.0 // database file, times the retained entries' bytes
)

// yearResult is what the year step measured.
type yearResult struct {
	n                int
	took             time.Duration // posting and finishing all n
	empty, year      []acceptResult
	emptyReady       time.Duration
	ready            time.Duration // start to /readyz on the year's database
	afterFill        memory
	afterStart       memory
	file             int64 // the database file's allocated bytes, after stop
	retained         int   // entries in the file
	retainedBytes    int64 // their keys and records
	backup           time.Duration
	backupBytes      int64
	salvage          time.Duration
	salvageOf        int // entries in the file salvaged
	salvageRecovered int
}

// runYear is the year step: an empty database's accept latency and start
// as the reference; then n receipts posted from 32 clients in rounds of
// yearRound, each finished by the simulator (sync.concurrency 32) before
// the next, with retention pruning running, as a till's receipts are sent
// as they come rather than piled up; then, on that database: the file
// against the entries it keeps, memory, and after a restart (retention
// set to a year, so that no pruning pass of the bench's shortened window
// runs while it is measured) start to /readyz, accept at 1 and 16
// clients, a snapshot (receiptd backup, until the snapshots of [backup]
// land); last a salvage of the stopped database.
func (b *bench) runYear(ctx context.Context, o options, n int) (yearResult, error) {
	r := yearResult{n: n}
	s := sim.New(sim.Options{Seed: 1})
	if err := s.Start("127.0.0.1:0"); err != nil {
		return r, err
	}
	defer s.Close()
	step := func(name string) { fmt.Fprintf(os.Stderr, "%s  year: %s\n", time.Now().Format("15:04:05"), name) }
	step("accept at 1 and 16 clients on an empty database")
	var err error
	if r.empty, r.emptyReady, err = b.yearAccept(ctx, s, nil, o.acceptFor); err != nil {
		return r, err
	}
	cfg, dir, err := b.config(s.URL(), 32)
	if err != nil {
		return r, err
	}
	cfg.Retention.Keep, cfg.Retention.PruneInterval = config.Dur(*yearKeep), config.Dur(max(time.Second, *yearKeep/6))
	if err := s.SetFaults(sim.Faults{}); err != nil {
		return r, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return r, err
	}
	step(fmt.Sprintf("post %d receipts from 32 clients in rounds of %d, each finished by the simulator; retention.keep %s",
		n, yearRound, *yearKeep))
	t0 := time.Now()
	for done := 0; done < n && err == nil; done += yearRound {
		if err = postN(ctx, p.URL(), 32, min(yearRound, n-done), fmt.Sprintf("year%07d", done)); err == nil {
			err = waitFinished(ctx, p.URL())
		}
	}
	if err != nil {
		_ = p.Kill()
		return r, err
	}
	r.took = time.Since(t0)
	if r.afterFill, err = peakMemory(ctx, p, o.settle); err != nil {
		_ = p.Kill()
		return r, err
	}
	if err := stop(ctx, p); err != nil {
		return r, err
	}
	return r, b.yearRestart(ctx, s, p, o, &r, step)
}

// yearRound is how many receipts the year step posts before it waits for
// them to be finished.
const yearRound = 5000

// yearRestart measures the stopped year database: the file against its
// entries; then, restarted with a year's retention: start to /readyz,
// memory, accept and a snapshot; then a salvage.
func (b *bench) yearRestart(ctx context.Context, s *sim.Sim, p *harness.Process, o options, r *yearResult,
	step func(string)) error {
	cfg := p.Config()
	db := filepath.Join(cfg.DataDir, daemon.DBFile)
	var err error
	if r.file, err = diskBytes(db); err != nil {
		return err
	}
	if r.retained, r.retainedBytes, err = entryBytes(db); err != nil {
		return err
	}
	step("restart on that database; accept at 1 and 16 clients, then receiptd backup")
	cfg.Retention.Keep, cfg.Retention.PruneInterval = config.Dur(8760*time.Hour), config.Dur(24*time.Hour)
	dir := filepath.Dir(p.ConfigPath())
	p2, ready, err := b.start(ctx, cfg, dir)
	if err != nil {
		return err
	}
	r.ready = ready
	if r.afterStart, err = peakMemory(ctx, p2, o.settle); err == nil {
		r.year, _, err = b.yearAccept(ctx, s, p2, o.acceptFor)
	}
	if err == nil {
		err = b.yearBackup(ctx, p2, dir, r)
	}
	if err != nil {
		_ = p2.Kill()
		return err
	}
	if err := stop(ctx, p2); err != nil {
		return err
	}
	if r.salvageOf, _, err = entryBytes(db); err != nil {
		return err
	}
	step("receiptd salvage of that database")
	t0 := time.Now()
	out, err := exec.CommandContext(ctx, b.bin, "salvage", "-config", p2.ConfigPath()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("salvage: %w: %s", err, out)
	}
	r.salvage = time.Since(t0)
	if m := regexp.MustCompile(`recovered (\d+) entries`).FindSubmatch(out); m != nil {
		r.salvageRecovered, _ = strconv.Atoi(string(m[1]))
	}
	return nil
}

// yearAccept measures accept at 1 and 16 clients with the simulator down
// (every answer a durable 202, as in runAccept): on p, or on a new daemon
// with an empty database when p is nil, whose start to /readyz it returns.
func (b *bench) yearAccept(ctx context.Context, s *sim.Sim, p *harness.Process, d time.Duration) ([]acceptResult, time.Duration, error) {
	if err := s.SetFaults(sim.Faults{Down: true}); err != nil {
		return nil, 0, err
	}
	var ready time.Duration
	if p == nil {
		cfg, dir, err := b.config(s.URL(), 2)
		if err != nil {
			return nil, 0, err
		}
		if p, ready, err = b.start(ctx, cfg, dir); err != nil {
			return nil, 0, err
		}
		defer func() { _ = stop(ctx, p) }()
	}
	c := newClient()
	var out []acceptResult
	for _, n := range []int{1, 16} {
		tag := fmt.Sprintf("y%d-%d", n, time.Now().UnixNano())
		if _, err := measureAccept(ctx, c, p.URL(), n, d/10, "warm"+tag); err != nil {
			return nil, 0, err
		}
		a, err := measureAccept(ctx, c, p.URL(), n, d, tag)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, a)
	}
	return out, ready, nil
}

// yearBackup times `receiptd backup` of the running daemon to a file.
func (b *bench) yearBackup(ctx context.Context, p *harness.Process, dir string, r *yearResult) error {
	file := filepath.Join(dir, "year-backup.db")
	t0 := time.Now()
	out, err := exec.CommandContext(ctx, b.bin, "backup", "-addr", p.URL(), file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("backup: %w: %s", err, out)
	}
	r.backup = time.Since(t0)
	r.backupBytes, err = diskBytes(file)
	_ = os.Remove(file)
	return err
}

// waitFinished waits until no receipt is queued or sending.
func waitFinished(ctx context.Context, url string) error {
	c := newClient()
	for {
		counts, err := statusCounts(ctx, c, url)
		if err != nil {
			return err
		}
		if counts["queued"]+counts["sending"] == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// entryBytes counts the entries of a stopped database and the bytes of
// their keys and records.
func entryBytes(path string) (int, int64, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, 0, fmt.Errorf("entry bytes: %w", err)
	}
	defer db.Close()
	var n int
	var total int64
	err = db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(store.BucketQueue).Bucket([]byte("entries")).ForEach(func(k, v []byte) error {
			n++
			total += int64(len(k) + len(v))
			return nil
		})
	})
	return n, total, err
}

func (r yearResult) rows() []row {
	var rows []row
	for i, a := range r.year {
		e := r.empty[i]
		x := row{figure: fmt.Sprintf("year: accept, %d client(s): p50 / p99", a.clients),
			measured:  fmt.Sprintf("%s / %s", ms(a.lat.p50()), ms(a.lat.p99())),
			reference: fmt.Sprintf("empty database %s / %s; p50 %.2fx", ms(e.lat.p50()), ms(e.lat.p99()), float64(a.lat.p50())/float64(e.lat.p50())),
			target:    fmt.Sprintf("p50 <= %.1fx empty", yearAcceptRatio),
			result:    verdict(float64(a.lat.p50()) <= yearAcceptRatio*float64(e.lat.p50()))}
		rows = append(rows, x)
	}
	mem := func(m memory) string { return fmt.Sprintf("%s private, %s file", mib(m.anon), mib(m.file)) }
	return append(rows,
		row{figure: fmt.Sprintf("year: %d posted and finished", r.n), measured: r.took.Round(time.Second).String(),
			reference: fmt.Sprintf("%d entries kept (retention.keep %s)", r.retained, *yearKeep)},
		row{figure: "year: memory after the year", measured: mem(r.afterFill),
			target: fmt.Sprintf("private <= %s", mib(privateBudget)), result: verdict(r.afterFill.anon <= privateBudget)},
		row{figure: "year: memory after a restart on it", measured: mem(r.afterStart),
			target: fmt.Sprintf("private <= %s", mib(privateBudget)), result: verdict(r.afterStart.anon <= privateBudget)},
		row{figure: "year: database file against its entries", measured: mib(r.file),
			reference: fmt.Sprintf("%d entries, %s of keys and records; %.2fx", r.retained, mib(r.retainedBytes),
				float64(r.file)/float64(max(1, r.retainedBytes))),
			target: fmt.Sprintf("<= %.0fx", yearFileRatio), result: verdict(float64(r.file) <= yearFileRatio*float64(r.retainedBytes))},
		row{figure: "year: start to /readyz", measured: ms(r.ready), reference: "empty database: " + ms(r.emptyReady),
			target: "< 1s", result: verdict(r.ready < time.Second)},
		row{figure: "year: snapshot (receiptd backup to a file, running)", measured: r.backup.Round(time.Millisecond).String(),
			reference: mib(r.backupBytes)},
		row{figure: "year: receiptd salvage (stopped)", measured: r.salvage.Round(time.Millisecond).String(),
			reference: fmt.Sprintf("%d of its %d entries recovered", r.salvageRecovered, r.salvageOf)},
	)
}

// yearStep runs the year step alone and prints its table.
func (b *bench) yearStep(ctx context.Context, o options) error {
	r, err := b.runYear(ctx, o, *yearN)
	if err != nil {
		return err
	}
	printTable(r.rows())
	fmt.Printf("\naccept: as in the usual run (Prefer: wait=0, the simulator down, %s per level after a warm-up), on an empty\n"+
		"database and on the year's after a restart with retention.keep a year (no pruning pass while measured); memory: peak RssAnon / RssFile over %s; the file: allocated blocks after stop; its\n"+
		"entries: keys and records of the entries bucket (the indexes are on top); snapshot: `receiptd backup FILE` (the\n"+
		"snapshots of [backup] are not in this build yet); salvage: `receiptd salvage` of the intact, stopped database.\n",
		o.acceptFor, o.settle)
	return nil
}
