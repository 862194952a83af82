package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// acceptResult is one concurrency level of POST /rest/receipt.
type acceptResult struct {
	clients int
	lat     sample
	rate    float64       // accepted receipts per second
	cpu     time.Duration // the daemon's CPU time over the window; -1: not measured
	group   float64       // records per flush of the write-ahead log over the window; 0: not measured
}

// logCounters reads receiptd_log_flushes_total and receiptd_log_records_total
// from the daemon's /metrics.
func logCounters(ctx context.Context, c *http.Client, url string) (flushes, records float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		var v float64
		if _, e := fmt.Sscanf(line, "receiptd_log_flushes_total %g", &v); e == nil {
			flushes = v
		}
		if _, e := fmt.Sscanf(line, "receiptd_log_records_total %g", &v); e == nil {
			records = v
		}
	}
	return flushes, records, nil
}

// cpuPerReceipt is the daemon's CPU time per accepted receipt, or -1.
func (a acceptResult) cpuPerReceipt() time.Duration {
	if a.cpu < 0 || len(a.lat) == 0 {
		return -1
	}
	return a.cpu / time.Duration(len(a.lat))
}

// newClient is an HTTP client that keeps a connection per concurrent client.
func newClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
}

// measureAccept posts receipts from clients goroutines for d, each request
// with a unique Idempotency-Key and "Prefer: wait=0".
func measureAccept(ctx context.Context, c *http.Client, url string, clients int, d time.Duration, tag string) (acceptResult, error) {
	var (
		mu   sync.Mutex
		lat  sample
		seq  atomic.Int64
		errs = make(chan error, clients)
		wg   sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	t0 := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine sample
			for time.Now().Before(deadline) && ctx.Err() == nil {
				suffix := fmt.Sprintf("%s-%07d", tag, seq.Add(1))
				s0 := time.Now()
				if err := postReceipt(ctx, c, url, suffix); err != nil {
					errs <- err
					return
				}
				mine = append(mine, time.Since(s0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return acceptResult{}, err
	}
	return acceptResult{clients: clients, lat: lat, rate: float64(len(lat)) / elapsed.Seconds()}, nil
}

// postReceipt posts one receipt and requires a 2xx.
func postReceipt(ctx context.Context, c *http.Client, url, suffix string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/rest/receipt", bytes.NewReader(body(suffix)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "bench-"+suffix)
	req.Header.Set("Prefer", "wait=0")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("post %s: %w", suffix, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post %s: status %d: %s", suffix, resp.StatusCode, b)
	}
	return nil
}

// getTimed makes n sequential GETs of path and returns their latencies; the
// answers must be 200 (and X-Cache HIT when wantHit).
func getTimed(ctx context.Context, c *http.Client, url string, n int, wantHit bool) (sample, error) {
	var s sample
	for range n {
		t0 := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", url, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		s = append(s, time.Since(t0))
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("get %s: status %d", url, resp.StatusCode)
		}
		if wantHit && resp.Header.Get("X-Cache") != "HIT" {
			return nil, fmt.Errorf("get %s: X-Cache %q after warm-up", url, resp.Header.Get("X-Cache"))
		}
	}
	return s, nil
}
