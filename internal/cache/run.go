package cache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/clock"
)

// refreshWorkers is how many background refreshes run at once.
const refreshWorkers = 2

// Run owns the cache's background work until ctx ends: a warm-up of the
// warm set (see warm.go: the lists, /rest/info, bank accounts and merchant
// info of its TINs, the classification's top two levels) at start, on each
// refresh tick and when a new TIN is noted, and the refreshes asked for by
// STALE hits. It returns only when every goroutine it started has ended.
// Only the first call does anything; later calls return at once.
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
	for _, op := range []client.Op{client.OpProductTaxCode, client.OpClassification, client.OpMerchantInfo,
		client.OpInfo, client.OpBankAccounts} {
		d = min(d, c.cfg.Refresh[op])
	}
	return max(d, time.Second)
}

// warmLoop warms up at start, then every warmTick, or refreshRetry after
// a warm-up that could not fetch everything (a till first started offline
// is warm within half a minute of the tax service coming back), or at once
// when a new TIN is noted.
func (c *Cache) warmLoop(ctx context.Context) {
	tick := c.warmTick()
	for {
		next := tick
		if !c.warmUp(ctx) {
			next = min(tick, refreshRetry)
		}
		if !clock.Wait(ctx, next, c.tinCh) {
			return
		}
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
		// Its own copy: a receipt's strings are slices of one copy of the
		// whole body (package receipt), which the set would keep alive.
		c.tins[strings.Clone(tin)] = struct{}{}
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
