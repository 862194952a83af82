package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
)

// refreshWorkers is how many background refreshes run at once.
const refreshWorkers = 2

// Run owns the cache's background work until ctx ends: a warm-up at start
// and on each refresh tick (district codes, product tax codes, the
// classification top level, merchant info of the TINs noted with NoteTIN),
// a warm-up of newly noted TINs, and the refreshes asked for by STALE hits.
// It returns only when every goroutine it started has ended. Only the first
// call does anything; later calls return at once.
func (c *Cache) Run(ctx context.Context) {
	first := false
	c.runOnce.Do(func() { first = true })
	if !first {
		c.log.Warn("cache Run called more than once; ignored")
		return
	}
	var wg sync.WaitGroup
	for range refreshWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.refreshLoop(ctx)
		}()
	}
	c.warmLoop(ctx)
	wg.Wait()
}

// refreshLoop performs the refreshes queued by STALE hits.
func (c *Cache) refreshLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case lk := <-c.refreshCh:
			res := c.fetch(ctx, ctx, lk)
			if res.pass != nil {
				// A 4xx for something that was there: keep serving what
				// is cached, and wait before asking again.
				c.noteFailure(lk, fmt.Errorf("%s: refresh refused: HTTP %d", lk.op, res.pass.StatusCode))
			}
			if res.err != nil {
				c.log.Debug("background refresh failed", zap.String("kind", string(lk.op)), zap.Error(res.err))
			}
			c.refreshDone(lk)
		}
	}
}

// warmTick is the warm-up period: the shortest refresh interval of the
// kinds warmed up, at least a second.
func (c *Cache) warmTick() time.Duration {
	d := c.cfg.Refresh[client.OpBranchInfo]
	for _, op := range []client.Op{client.OpProductTaxCode, client.OpClassification, client.OpMerchantInfo} {
		d = min(d, c.cfg.Refresh[op])
	}
	return max(d, time.Second)
}

func (c *Cache) warmLoop(ctx context.Context) {
	t := time.NewTicker(c.warmTick())
	defer t.Stop()
	c.warmUp(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.warmUp(ctx)
		case <-c.tinCh:
			c.warmUp(ctx)
		}
	}
}

// warmUp fetches every warm-up lookup that is missing or due.
func (c *Cache) warmUp(ctx context.Context) {
	lks := []lookup{{op: client.OpBranchInfo}, {op: client.OpProductTaxCode}, {op: client.OpClassification}}
	c.tinMu.Lock()
	for tin := range c.tins {
		lks = append(lks, lookup{op: client.OpMerchantInfo, param: tin})
	}
	c.tinMu.Unlock()
	var fetched, failed int
	var lastErr error
	for _, lk := range lks {
		if ctx.Err() != nil {
			return
		}
		if !c.due(lk) {
			continue
		}
		fetched++
		if res := c.fetch(ctx, ctx, lk); res.err != nil {
			failed++
			lastErr = res.err
		}
	}
	switch {
	case failed > 0:
		c.log.Info("cache warm-up incomplete; serving what is cached",
			zap.Int("fetched", fetched), zap.Int("failed", failed), zap.Error(lastErr))
	case fetched > 0:
		c.log.Debug("cache warm-up done", zap.Int("fetched", fetched))
	}
}

// due reports whether lk is missing or older than its refresh interval.
func (c *Cache) due(lk lookup) bool {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.index[lk.key()]
	if !ok {
		return true
	}
	e := el.Value.(*entry)
	return now.Sub(e.fetched) >= c.ttl(lk.op, e.negative)
}

// NoteTIN records a merchant TIN seen on a receipt so warm-up keeps its
// merchant info cached. A new TIN wakes the warm-up; it never blocks.
// Invalid TINs, and new ones beyond 1000 noted, are ignored.
func (c *Cache) NoteTIN(tin string) {
	lk, err := paramLookup(client.OpMerchantInfo, "tin", []string{tin})
	if err != nil {
		return
	}
	tin = lk.param
	c.tinMu.Lock()
	_, known := c.tins[tin]
	if !known && len(c.tins) < maxNotedTINs {
		c.tins[tin] = struct{}{}
	} else {
		known = true
	}
	c.tinMu.Unlock()
	if !known {
		select {
		case c.tinCh <- struct{}{}:
		default:
		}
	}
}
