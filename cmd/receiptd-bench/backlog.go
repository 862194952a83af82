package main

import (
	"context"
	"os"
	"time"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// startResult is a daemon's time to ready and its peak memory while idle.
type startResult struct {
	entries int
	ready   time.Duration
	mem     memory // peak over the sampling window after ready
	dbSize  int64
	written time.Duration // time to write the backlog (not part of start)
}

// runStart writes a backlog of n receipts (none when n is 0), starts the
// daemon with the upstream unreachable so the backlog stays, and measures
// time to /readyz and the peak memory over the next settle period.
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
		if fi, err := os.Stat(layout.DB(cfg.DataDir)); err == nil {
			r.dbSize = fi.Size()
		}
	}
	p, ready, err := b.start(ctx, cfg, dir)
	if err != nil {
		return r, err
	}
	r.ready = ready
	if r.mem, err = peakMemory(ctx, p, settle); err != nil {
		_ = p.Kill()
		return r, err
	}
	return r, stop(ctx, p)
}
