package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/harness"
)

// startResult is a daemon's time to ready and its peak RSS while idle.
type startResult struct {
	entries int
	ready   time.Duration
	rss     int64 // peak over the sampling window after ready
	dbSize  int64
	written time.Duration // time to write the backlog (not part of start)
}

// runStart writes a backlog of n receipts (none when n is 0), starts the
// daemon with the upstream unreachable so the backlog stays, and measures
// time to /readyz and the peak RSS over the next settle period.
func (b *bench) runStart(ctx context.Context, n int, settle time.Duration) (startResult, error) {
	down, err := harness.FreeAddr() // nobody listens: the upstream is down
	if err != nil {
		return startResult{}, err
	}
	cfg, dir, err := b.config("http://"+down, 2)
	if err != nil {
		return startResult{}, err
	}
	r := startResult{entries: n}
	if n > 0 {
		if r.written, err = writeBacklog(ctx, cfg.DataDir, n); err != nil {
			return r, err
		}
		if fi, err := os.Stat(filepath.Join(cfg.DataDir, daemon.DBFile)); err == nil {
			r.dbSize = fi.Size()
		}
	}
	p, ready, err := b.start(ctx, cfg, dir)
	if err != nil {
		return r, err
	}
	r.ready = ready
	if r.rss, err = peakRSS(ctx, p, settle); err != nil {
		_ = p.Kill()
		return r, err
	}
	return r, stop(ctx, p)
}

// peakRSS samples the process's RSS every 50 ms for d.
func peakRSS(ctx context.Context, p *harness.Process, d time.Duration) (int64, error) {
	var peak int64
	deadline := time.Now().Add(d)
	for {
		rss, err := p.RSS()
		if err != nil {
			return 0, fmt.Errorf("rss: %w", err)
		}
		peak = max(peak, rss)
		if !time.Now().Before(deadline) {
			return peak, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
