package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// body is the receipt every scenario posts or enqueues.
func body(suffix string) []byte { return sim.SampleReceipt("B1", suffix) }

// newReceipt is body(suffix) as the API would enqueue it, under the
// Idempotency-Key postReceipt sends.
func newReceipt(suffix string) queue.NewReceipt {
	b := body(suffix)
	return queue.NewReceipt{IdemKey: "bench-" + suffix, Body: b, BodyHash: receipt.Fingerprint(b),
		MerchantTin: sim.SampleMerchantTin, PosNo: "B1", BillIDSuffix: suffix}
}

// bench holds what every scenario shares.
type bench struct {
	bin string
	dir string // scratch directory; every data dir is below it (one disk)
	n   int    // scenarios started, for unique directory names
	// fleet, when set, changes every configuration: a [fleet] push (the
	// fleet step) or the [control] channel (the control step).
	fleet func(*config.Config)
}

// config returns a configuration with a fresh data directory.
func (b *bench) config(upstream string, concurrency int) (config.Config, string, error) {
	b.n++
	dir := filepath.Join(b.dir, fmt.Sprintf("run%02d", b.n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return config.Config{}, "", fmt.Errorf("scenario dir: %w", err)
	}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL, cfg.Upstream.StockBaseURL = upstream, upstream, upstream
	cfg.Sync.Concurrency = concurrency
	cfg.Sync.MinBackoff, cfg.Sync.MaxBackoff = config.Dur(50*time.Millisecond), config.Dur(time.Second)
	cfg.Log.Level = "warn"
	if b.fleet != nil {
		b.fleet(&cfg)
	}
	return cfg, dir, nil
}

// start starts the daemon and waits until it is ready.
func (b *bench) start(ctx context.Context, cfg config.Config, dir string) (*harness.Process, time.Duration, error) {
	p, err := harness.Start(ctx, b.bin, dir, cfg)
	if err != nil {
		return nil, 0, err
	}
	if err := p.WaitReady(ctx); err != nil {
		return nil, 0, err
	}
	return p, time.Since(p.Started), nil
}

// startBuild starts another receiptd build (bin: -floor-also,
// -online-also) on upstream, with a data directory of its own, and waits
// until it is ready; one that never is, is stopped.
func (b *bench) startBuild(ctx context.Context, bin, upstream string) (*harness.Process, error) {
	cfg, dir, err := b.config(upstream, 2)
	if err != nil {
		return nil, err
	}
	p, err := harness.Start(ctx, bin, dir, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	if err := p.WaitReady(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", bin, err), stop(ctx, p))
	}
	return p, nil
}

// startOffline starts a daemon whose tax service cannot be reached (a free
// port nobody listens on), so that everything posted stays in its queue.
func (b *bench) startOffline(ctx context.Context) (*harness.Process, config.Config, string, error) {
	down, err := harness.FreeAddr()
	if err != nil {
		return nil, config.Config{}, "", err
	}
	cfg, dir, err := b.config("http://"+down, 2)
	if err != nil {
		return nil, cfg, dir, err
	}
	p, _, err := b.start(ctx, cfg, dir)
	return p, cfg, dir, err
}

// statusCounts reads the entry counts by state from /receiptd/status.
func statusCounts(ctx context.Context, c *http.Client, url string) (map[string]int, error) {
	var st struct {
		Counts map[string]int `json:"counts"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/receiptd/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return st.Counts, nil
}

func stop(ctx context.Context, p *harness.Process) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return p.Stop(ctx)
}

// writeBacklog enqueues n receipts straight into a new database in dataDir
// with internal/queue (the daemon is not running), from many goroutines so
// they share group commits.
func writeBacklog(ctx context.Context, dataDir string, n int) (time.Duration, error) {
	t0 := time.Now()
	st, err := store.Open(layout.DB(dataDir), store.Options{})
	if err != nil {
		return 0, fmt.Errorf("backlog: %w", err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		_ = st.Close()
		return 0, fmt.Errorf("backlog: %w", err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 512)
	for range 512 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				suffix := fmt.Sprintf("bl-%07d", i)
				if _, _, err := q.Enqueue(ctx, newReceipt(suffix)); err != nil {
					errs <- fmt.Errorf("backlog: enqueue %s: %w", suffix, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	err = <-errs
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("backlog: %w", cerr)
	}
	return time.Since(t0), err
}

// measureEnqueue times n sequential queue.Enqueue calls on a new database
// in dir, with its write-ahead log as the daemon has it: the accept path
// without HTTP, to tell API cost from storage cost.
func measureEnqueue(ctx context.Context, dir string, n int) (sample, error) {
	ref := filepath.Join(dir, "enqueue-ref")
	st, err := store.Open(layout.DB(ref), store.Options{})
	if err != nil {
		return nil, fmt.Errorf("enqueue reference: %w", err)
	}
	defer st.Close()
	q, err := queue.Open(ctx, st, queue.Options{LogDir: layout.WAL(ref)})
	if err != nil {
		return nil, fmt.Errorf("enqueue reference: %w", err)
	}
	defer q.Close(ctx)
	var s sample
	for i := range n {
		r := newReceipt(fmt.Sprintf("ref-%07d", i))
		t0 := time.Now()
		if _, _, err := q.Enqueue(ctx, r); err != nil {
			return nil, fmt.Errorf("enqueue reference: %w", err)
		}
		s = append(s, time.Since(t0))
	}
	return s, nil
}
