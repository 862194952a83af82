package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// The year on a till: a step of its own, run alone with -year N.
var (
	yearN    = flag.Int("year", 0, "run only the year-on-a-till step with N receipts posted and finished (1000000 for the full year; 0: the usual run)")
	yearRate = flag.Float64("year-rate", 500, "receipts per second the year step posts at, in rounds (a till's sales come at their own pace, not the daemon's)")
	yearKeep = flag.Duration("year-keep", time.Minute, "retention.keep during the year step (pruned as often, against it, as the defaults prune against theirs)")
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
	file             int64         // the database file's allocated bytes, after stop
	kept             dbFile        // the file after the year, stopped: its entries and pages
	snapshot         time.Duration // the first snapshot of [backup]: written and checked
	snapshotBytes    int64
	snapshotEntries  int
	salvage          time.Duration
	salvageOf        int // entries in the file salvaged
	salvageRecovered int
}

// runYear is the year step: an empty database's accept latency and start
// as the reference; then n receipts posted from 32 clients in rounds of
// yearRound(), each finished by the simulator (sync.concurrency 32) before
// the next, with retention pruning running, as a till's receipts are sent
// as they come rather than piled up; then, on that database: the file
// against the entries it keeps, memory, and after a restart (retention
// set to a year, so that no pruning pass of the bench's shortened window
// runs while it is measured) start to /readyz, accept at 1 and 16
// clients; then the first snapshot of [backup]; last a salvage of the
// stopped database.
func (b *bench) runYear(ctx context.Context, o options, n int) (yearResult, error) {
	r := yearResult{n: n}
	// PosAPI's lottery reserve (the simulator's 100,000 by default) lasts
	// a till months; posted at the bench's pace it ran out every 200 s and
	// held the sales until the next sendData (send_every): a stall no till
	// has. The reserve is made to outlast the step.
	s := sim.New(sim.Options{Seed: 1, Lotteries: 2*n + 100000})
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
	cfg.Retention.Keep, cfg.Retention.PruneInterval = config.Dur(*yearKeep), config.Dur(yearPruneInterval(*yearKeep))
	if err := s.SetFaults(sim.Faults{}); err != nil {
		return r, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return r, err
	}
	round := yearRound()
	step(fmt.Sprintf("post %d receipts at %.0f per second from 32 clients in rounds of %d, each finished by the simulator; retention.keep %s",
		n, *yearRate, round, *yearKeep))
	t0 := time.Now()
	for done := 0; done < n && err == nil; done += round {
		if err = sleepUntil(ctx, t0.Add(time.Duration(float64(done)/(*yearRate)*float64(time.Second)))); err != nil {
			break
		}
		if err = postN(ctx, p.URL(), 32, min(round, n-done), fmt.Sprintf("year%07d", done)); err == nil {
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

// yearPruneInterval shortens the prune interval with the retention: the
// defaults prune every hour what is older than 90 days (1/2160 of it), so
// a till keeps between 90 days and 90 days and an hour of receipts. A
// bench that shortened keep alone would keep up to one interval more,
// and hold those pages free afterwards: a file no till has.
func yearPruneInterval(keep time.Duration) time.Duration {
	d := config.Default().Retention
	return max(100*time.Millisecond, time.Duration(float64(keep)*d.PruneInterval.Seconds()/d.Keep.Seconds()))
}

// sleepUntil waits until t, or returns at once when t has passed: a
// round that starts late starts at once.
func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// yearRound is how many receipts the year step posts before it waits for
// them to be finished: at most 5,000, and at most a twentieth of what
// the retention keeps, so the rounds' steps stay small against the data.
func yearRound() int {
	return max(100, min(5000, int(*yearRate*yearKeep.Seconds()/20)))
}

// yearRestart measures the stopped year database: the file against its
// entries; then, restarted with a year's retention: start to /readyz,
// memory, accept and a snapshot; then a salvage.
func (b *bench) yearRestart(ctx context.Context, s *sim.Sim, p *harness.Process, o options, r *yearResult,
	step func(string)) error {
	cfg := p.Config()
	db := layout.DB(cfg.DataDir)
	var err error
	if r.file, err = diskBytes(db); err != nil {
		return err
	}
	if r.kept, err = readDBFile(db); err != nil {
		return err
	}
	step("restart on that database; accept at 1 and 16 clients")
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
	if err != nil {
		_ = p2.Kill()
		return err
	}
	if err := stop(ctx, p2); err != nil {
		return err
	}
	step("restart with a snapshot every second ([backup]); the first one")
	if err := b.yearSnapshot(ctx, cfg, dir, r); err != nil {
		return err
	}
	salvageOf, err := readDBFile(db)
	if err != nil {
		return err
	}
	r.salvageOf = salvageOf.entries
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

// yearSnapshot restarts the stopped year database with [backup] taking
// a snapshot every second, and reads the first one's figures (written,
// fsynced, reopened and checked) from /receiptd/status.
func (b *bench) yearSnapshot(ctx context.Context, cfg config.Config, dir string, r *yearResult) error {
	cfg.Backup = config.Backup{Dir: filepath.Join(dir, "year-snapshots"), Every: config.Dur(time.Second), Keep: 1}
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return err
	}
	c := newClient()
	for {
		st, err := backupState(ctx, c, p.URL())
		if err == nil && st.LastError != "" {
			err = errors.New(st.LastError)
		}
		if err != nil {
			_ = p.Kill()
			return fmt.Errorf("year: snapshot: %w", err)
		}
		if st.Snapshots > 0 {
			r.snapshot = time.Duration(st.LastDurationSeconds * float64(time.Second))
			r.snapshotBytes, r.snapshotEntries = st.LastBytes, st.LastEntries
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := stop(ctx, p); err != nil {
		return err
	}
	return os.RemoveAll(cfg.Backup.Dir)
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

// dbFile is what the year step reads of a stopped database.
type dbFile struct {
	entries int    // in the entries bucket
	bytes   int64  // their keys and records
	layout  string // where the file's pages go: each queue bucket's pages and how full, and those no bucket holds
}

// readDBFile opens a stopped database read-only and reads its entries
// and the layout of its pages (free pages, the freelist and the two meta
// pages are the ones no bucket holds).
func readDBFile(path string) (dbFile, error) {
	var f dbFile
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return f, fmt.Errorf("read %s: %w", path, err)
	}
	defer db.Close()
	var b strings.Builder
	err = db.View(func(tx *bbolt.Tx) error {
		var held int
		err := tx.ForEach(func(name []byte, root *bbolt.Bucket) error {
			st := root.Stats()
			held += st.BranchAlloc + st.LeafAlloc
			if !bytes.Equal(name, store.BucketQueue) {
				return nil
			}
			return root.ForEachBucket(func(k []byte) error {
				st := root.Bucket(k).Stats()
				alloc, used := st.BranchAlloc+st.LeafAlloc, st.BranchInuse+st.LeafInuse
				if alloc > 0 {
					fmt.Fprintf(&b, "%s %s (%d keys, %.0f%% full, %d of %d leaf pages overflow); ",
						k, mib(int64(alloc)), st.KeyN, 100*float64(used)/float64(alloc), st.LeafOverflowN, st.LeafPageN+st.LeafOverflowN)
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "held by no bucket (free pages, the freelist, meta): %s of %s", mib(tx.Size()-int64(held)), mib(tx.Size()))
		return tx.Bucket(store.BucketQueue).Bucket([]byte("entries")).ForEach(func(k, v []byte) error {
			f.entries++
			f.bytes += int64(len(k) + len(v))
			return nil
		})
	})
	f.layout = b.String()
	return f, err
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
			reference: fmt.Sprintf("%.0f per second (asked %.0f); %d entries kept (retention.keep %s, pruned every %s)",
				float64(r.n)/r.took.Seconds(), *yearRate, r.kept.entries, *yearKeep, yearPruneInterval(*yearKeep))},
		row{figure: "year: memory after the year", measured: mem(r.afterFill),
			target: fmt.Sprintf("private <= %s", mib(privateBudget)), result: verdict(r.afterFill.anon <= privateBudget)},
		row{figure: "year: memory after a restart on it", measured: mem(r.afterStart),
			target: fmt.Sprintf("private <= %s", mib(privateBudget)), result: verdict(r.afterStart.anon <= privateBudget)},
		row{figure: "year: database file against its entries", measured: mib(r.file),
			reference: fmt.Sprintf("%d entries, %s of keys and records; %.2fx", r.kept.entries, mib(r.kept.bytes),
				float64(r.file)/float64(max(1, r.kept.bytes))),
			target: fmt.Sprintf("<= %.0fx", yearFileRatio), result: verdict(float64(r.file) <= yearFileRatio*float64(r.kept.bytes))},
		row{figure: "year: start to /readyz", measured: ms(r.ready), reference: "empty database: " + ms(r.emptyReady),
			target: "< 1s", result: verdict(r.ready < time.Second)},
		row{figure: "year: snapshot ([backup], running): written and checked", measured: r.snapshot.Round(time.Millisecond).String(),
			reference: fmt.Sprintf("%s, %d entries", mib(r.snapshotBytes), r.snapshotEntries)},
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
	fmt.Printf("\nthe year's file after stop, by bucket: %s\n", r.kept.layout)
	fmt.Printf("\naccept: as in the usual run (Prefer: wait=0, the simulator down, %s per level after a warm-up), on an empty\n"+
		"database and on the year's after a restart with retention.keep a year (no pruning pass while measured);\n"+
		"memory: peak RssAnon / RssFile over %s; the file: allocated blocks after stop, against the keys and records of\n"+
		"the entries bucket (the indexes are on top); snapshot: the first of [backup] every 1s after one more restart,\n"+
		"as /receiptd/status reports it; salvage: `receiptd salvage` of the intact, stopped database.\n",
		o.acceptFor, o.settle)
	return nil
}
