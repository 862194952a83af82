package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/config"
)

// snapshotFlags are the snapshot step's own flags.
var snapshotFlags struct {
	only    bool
	window  time.Duration
	clients int
}

func init() {
	flag.BoolVar(&snapshotFlags.only, "snapshot-only", false, "run only the snapshot step (its table and notes)")
	flag.DurationVar(&snapshotFlags.window, "snapshot-for", 10*time.Second, "accept window of the snapshot step, without and with snapshots")
	flag.IntVar(&snapshotFlags.clients, "snapshot-clients", 16, "clients of the snapshot step")
}

// snapshotResult is accept latency at snapshotFlags.clients on a database
// of n entries without snapshots, and with [backup] writing snapshots back
// to back (every = 1s), the requests split by whether a snapshot was
// being written when they started.
type snapshotResult struct {
	n              int
	without        sample
	during, beside sample // with snapshots: requests started during one, and between two
	snapshots      []backup.Status
	share          float64 // of the window spent writing and checking snapshots
}

// timedSample is accept latencies with the time each request started.
type timedSample struct {
	at  []time.Time
	lat sample
}

// runSnapshot fills a database with o.backlog receipts (upstream down),
// measures accepts on it without snapshots, then restarts it with
// snapshots every second to a directory on the same disk and measures
// again while they run.
func (b *bench) runSnapshot(ctx context.Context, o options) (snapshotResult, error) {
	r := snapshotResult{n: o.backlog}
	p, cfg, dir, err := b.startOffline(ctx)
	if err != nil {
		return r, err
	}
	if err := postN(ctx, p.URL(), 64, o.backlog, "snapfill"); err != nil {
		_ = p.Kill()
		return r, err
	}
	if err := stop(ctx, p); err != nil {
		return r, err
	}
	off, err := b.acceptOn(ctx, cfg, dir, "snapoff", nil)
	if err != nil {
		return r, err
	}
	r.without = off.lat
	cfg.Backup = config.Backup{Dir: filepath.Join(dir, "snapshots"), Every: config.Dur(time.Second), Keep: 2}
	on, err := b.acceptOn(ctx, cfg, dir, "snapon", &r.snapshots)
	if err != nil {
		return r, err
	}
	r.split(on, snapshotFlags.window)
	return r, nil
}

// acceptOn starts the daemon on cfg, waits for its first snapshot when
// snapshots are on, and measures accepts for snapshotFlags.window,
// collecting the snapshots taken meanwhile into snaps.
func (b *bench) acceptOn(ctx context.Context, cfg config.Config, dir, tag string, snaps *[]backup.Status) (timedSample, error) {
	p, _, err := b.start(ctx, cfg, dir)
	if err != nil {
		return timedSample{}, err
	}
	c := newClient()
	if snaps != nil {
		for {
			st, err := backupState(ctx, c, p.URL())
			if err != nil || st.LastError != "" {
				_ = p.Kill()
				return timedSample{}, fmt.Errorf("snapshot step: first snapshot: %v %s", err, st.LastError)
			}
			if st.Snapshots > 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if _, err := measureAccept(ctx, c, p.URL(), snapshotFlags.clients, time.Second, tag+"warm"); err != nil {
		_ = p.Kill()
		return timedSample{}, err
	}
	stopPoll := make(chan struct{})
	var wg sync.WaitGroup
	if snaps != nil {
		wg.Go(func() { pollSnapshots(ctx, c, p.URL(), stopPoll, snaps) })
	}
	s, err := measureTimed(ctx, c, p.URL(), snapshotFlags.clients, snapshotFlags.window, tag)
	close(stopPoll)
	wg.Wait()
	if err != nil {
		_ = p.Kill()
		return s, err
	}
	return s, stop(ctx, p)
}

// pollSnapshots records every snapshot the daemon reports until done.
func pollSnapshots(ctx context.Context, c *http.Client, url string, done <-chan struct{}, out *[]backup.Status) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := backupState(ctx, c, url)
		if err == nil && st.Snapshots != last && st.LastSuccess != nil {
			last = st.Snapshots
			*out = append(*out, st)
		}
	}
}

func backupState(ctx context.Context, c *http.Client, url string) (backup.Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/receiptd/status", nil)
	if err != nil {
		return backup.Status{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return backup.Status{}, err
	}
	defer resp.Body.Close()
	var st struct{ Backup backup.Status }
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st.Backup, err
}

// measureTimed is measureAccept keeping each request's start.
func measureTimed(ctx context.Context, c *http.Client, url string, clients int, d time.Duration, tag string) (timedSample, error) {
	var (
		mu  sync.Mutex
		out timedSample
		seq atomic.Int64
		wg  sync.WaitGroup
	)
	errs := make(chan error, clients)
	deadline := time.Now().Add(d)
	for range clients {
		wg.Go(func() {
			var mine timedSample
			for time.Now().Before(deadline) && ctx.Err() == nil {
				s0 := time.Now()
				if err := postReceipt(ctx, c, url, fmt.Sprintf("%s-%07d", tag, seq.Add(1))); err != nil {
					errs <- err
					return
				}
				mine.at, mine.lat = append(mine.at, s0), append(mine.lat, time.Since(s0))
			}
			mu.Lock()
			out.at, out.lat = append(out.at, mine.at...), append(out.lat, mine.lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	return out, <-errs
}

// split sorts the requests of s into those started while a snapshot was
// written and checked ([LastSuccess, +LastDurationSeconds]) and the rest.
func (r *snapshotResult) split(s timedSample, window time.Duration) {
	var busy time.Duration
	for _, st := range r.snapshots {
		busy += time.Duration(st.LastDurationSeconds * float64(time.Second))
	}
	r.share = busy.Seconds() / window.Seconds()
	for i, at := range s.at {
		in := false
		for _, st := range r.snapshots {
			from := *st.LastSuccess
			if !at.Before(from) && at.Before(from.Add(time.Duration(st.LastDurationSeconds*float64(time.Second)))) {
				in = true
				break
			}
		}
		if in {
			r.during = append(r.during, s.lat[i])
		} else {
			r.beside = append(r.beside, s.lat[i])
		}
	}
}

func (r snapshotResult) rows() []row {
	var size int64
	var took time.Duration
	lo, hi := 0, 0
	if n := len(r.snapshots); n > 0 {
		size, took = r.snapshots[n-1].LastBytes, time.Duration(r.snapshots[n-1].LastDurationSeconds*float64(time.Second))
		lo, hi = r.snapshots[0].LastEntries, r.snapshots[n-1].LastEntries
	}
	c := snapshotFlags.clients
	return []row{
		{figure: fmt.Sprintf("snapshot (%d posted, then %d-%d entries): last duration, size", r.n, lo, hi),
			measured:  fmt.Sprintf("%s, %s", took.Round(time.Millisecond), mib(size)),
			reference: fmt.Sprintf("%d snapshots in %s, %.0f%% of it", len(r.snapshots), snapshotFlags.window, 100*r.share)},
		{figure: fmt.Sprintf("accept, %d clients, while a snapshot is written: p50 / p99", c),
			measured:  fmt.Sprintf("%s / %s (%d)", ms(r.during.p50()), ms(r.during.p99()), len(r.during)),
			reference: fmt.Sprintf("without snapshots: %s / %s (%d)", ms(r.without.p50()), ms(r.without.p99()), len(r.without))},
		{figure: fmt.Sprintf("accept, %d clients, between snapshots: p50 / p99", c),
			measured: fmt.Sprintf("%s / %s (%d)", ms(r.beside.p50()), ms(r.beside.p99()), len(r.beside))},
	}
}

func (r snapshotResult) notes() string {
	return fmt.Sprintf("- snapshot: %d receipts posted from 64 clients (upstream unreachable); the daemon restarted on them and\n"+
		"  POST /rest/receipt timed from %d clients for %s without [backup], then again with [backup] every = 1s,\n"+
		"  keep = 2, dir on the same disk (the worst case: a second disk takes the copy's writes off the database's),\n"+
		"  so snapshots run back to back; each request is counted as during a snapshot when it started between a\n"+
		"  snapshot's start and its end (written, fsynced, checked) as /receiptd/status reports them. The receipts\n"+
		"  accepted in the windows add to the database, so the snapshots hold more than the entries posted first.",
		r.n, snapshotFlags.clients, snapshotFlags.window)
}

// snapshotOnly runs the snapshot step alone and prints its table.
func (b *bench) snapshotOnly(ctx context.Context, o options) error {
	fmt.Fprintf(os.Stderr, "%s  snapshot step: %d receipts, %d clients\n", time.Now().Format("15:04:05"), o.backlog, snapshotFlags.clients)
	r, err := b.runSnapshot(ctx, o)
	if err != nil {
		return err
	}
	printTable(r.rows())
	fmt.Println()
	fmt.Println(r.notes())
	return nil
}
