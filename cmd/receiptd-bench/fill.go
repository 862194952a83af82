package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// fillResult is a database filled through the API, and the daemon's
// memory after the fill and after a restart.
type fillResult struct {
	n           int
	took        time.Duration
	bodyLen     int
	disk        int64 // allocated bytes of the database file after the fill
	afterFill   memory
	afterStart  memory
	readyFilled time.Duration // exec to /readyz on the filled database
}

var fillOnly = flag.Bool("fill-only", false, "run only the fill step: bytes on disk and memory after posting -backlog receipts from 64 clients, and after a restart")

// fillOnlyRun is the fill step alone, with the empty database's memory it
// is reported beside.
func (b *bench) fillOnlyRun(ctx context.Context, o options) error {
	var r results
	var err error
	if r.empty, err = b.runStart(ctx, 0, o.settle); err != nil {
		return err
	}
	if r.fill, err = b.runFill(ctx, o.backlog, o.settle); err != nil {
		return err
	}
	fmt.Printf("fill step alone: %d receipts posted from 64 clients in %s, the tax service unreachable\n", r.fill.n, r.fill.took.Round(time.Millisecond))
	printTable(r.fillRows())
	return nil
}

// runFill posts n receipts through HTTP from 64 clients to a daemon whose
// upstream is unreachable (so all stay in the queue), reads its memory
// over settle, stops it, measures the database file, starts it again on
// the same data and reads its memory again.
func (b *bench) runFill(ctx context.Context, n int, settle time.Duration) (fillResult, error) {
	r := fillResult{n: n, bodyLen: len(body("fill-0000001"))}
	p, cfg, dir, err := b.startOffline(ctx)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	if err := postN(ctx, p.URL(), 64, n, "fill"); err != nil {
		_ = p.Kill()
		return r, err
	}
	r.took = time.Since(t0)
	if r.afterFill, err = peakMemory(ctx, p, settle); err != nil {
		_ = p.Kill()
		return r, err
	}
	if err := stop(ctx, p); err != nil {
		return r, err
	}
	if r.disk, err = dataBytes(cfg.DataDir); err != nil {
		return r, err
	}
	if p, r.readyFilled, err = b.start(ctx, cfg, dir); err != nil {
		return r, err
	}
	if r.afterStart, err = peakMemory(ctx, p, settle); err != nil {
		_ = p.Kill()
		return r, err
	}
	return r, stop(ctx, p)
}

// postN posts n receipts from clients goroutines, each a 2xx.
func postN(ctx context.Context, url string, clients, n int, tag string) error {
	c := newClient()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n) && ctx.Err() == nil; i = next.Add(1) {
				if err := postReceipt(ctx, c, url, fmt.Sprintf("%s-%07d", tag, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// peakMemory samples the process's private and file-backed resident
// memory every 50 ms for d and keeps the peak of each.
func peakMemory(ctx context.Context, p *harness.Process, d time.Duration) (memory, error) {
	var peak memory
	deadline := time.Now().Add(d)
	for {
		m, err := procMemory(p.PID)
		if err != nil {
			return peak, err
		}
		peak.anon, peak.file = max(peak.anon, m.anon), max(peak.file, m.file)
		if !time.Now().Before(deadline) {
			return peak, nil
		}
		select {
		case <-ctx.Done():
			return peak, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// dataBytes is the space the database and its write-ahead log take on
// disk (allocated blocks).
func dataBytes(dataDir string) (int64, error) {
	total, err := diskBytes(layout.DB(dataDir))
	if err != nil {
		return 0, err
	}
	logDir := layout.WAL(dataDir)
	ents, err := os.ReadDir(logDir)
	if err != nil {
		return 0, fmt.Errorf("bytes on disk: %w", err)
	}
	for _, e := range ents {
		n, err := diskBytes(filepath.Join(logDir, e.Name()))
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
