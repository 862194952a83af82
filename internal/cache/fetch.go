package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/store"
)

// fetchTimeout bounds one coalesced upstream fetch started by a request; it
// is detached from the request so one impatient caller does not fail the
// others waiting on the same fetch.
const fetchTimeout = 60 * time.Second

// result is the outcome of one upstream fetch.
type result struct {
	rec  *record     // a 2xx answer (stored, or at least served)
	pass *client.Raw // a 4xx answer: passed through, not cached
	err  error       // the upstream failed: serve stale or 503
}

// flightGroup coalesces concurrent fetches of one key: the first caller
// runs the fetch in its own goroutine, the others wait for its result.
type flightGroup struct {
	mu    sync.Mutex
	calls map[string]*flight
}

type flight struct {
	done    chan struct{}
	res     result
	waiters int // callers that joined; under flightGroup.mu (tests read it)
}

// do runs fn for key unless a run is in flight, in which case it waits for
// that run's result (or ctx). The second result reports whether this caller
// ran fn.
func (g *flightGroup) do(ctx context.Context, key string, fn func() result) (result, bool) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = make(map[string]*flight)
	}
	if f, ok := g.calls[key]; ok {
		f.waiters++
		g.mu.Unlock()
		select {
		case <-f.done:
			return f.res, false
		case <-ctx.Done():
			return result{err: fmt.Errorf("wait for fetch: %w", ctx.Err())}, false
		}
	}
	f := &flight{done: make(chan struct{})}
	g.calls[key] = f
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.calls, key)
		g.mu.Unlock()
		close(f.done)
	}()
	f.res = fn()
	return f.res, true
}

// fetch asks the upstream for lk, coalesced with concurrent fetches of the
// same key, and stores a 2xx answer. fctx bounds the fetch itself; wctx
// bounds only this caller's wait for someone else's fetch.
func (c *Cache) fetch(wctx, fctx context.Context, lk lookup) result {
	res, _ := c.flights.do(wctx, lk.flightKey(), func() result { return c.fetchNow(fctx, lk) })
	return res
}

func (c *Cache) fetchNow(ctx context.Context, lk lookup) result {
	raw, err := c.up.Get(client.WithForward(ctx, lk.fwd), lk.op, lk.query(), lk.segs...)
	var negative bool
	switch {
	case err == nil && raw == nil:
		err = fmt.Errorf("%s: no answer: %w", lk.op, ErrBadAnswer)
	case err == nil:
		negative, err = judge(lk.op, raw.Body)
		if err == nil && negative && c.contradicts(lk) {
			err = fmt.Errorf("%s: not found, but it was found before; keeping the known answer: %w", lk.op, ErrFailedAnswer)
		}
	}
	if err != nil {
		if cl, _ := client.ClassOf(err); cl == client.Rejected && raw != nil {
			return result{pass: raw}
		}
		if ctx.Err() == nil { // a shutdown is not the upstream's failure
			c.noteFailure(lk, err)
		}
		return result{err: err}
	}
	if lk.op == client.OpInfo && c.cfg.OnInfo != nil {
		c.cfg.OnInfo(raw.Body)
	}
	rec := &record{
		fetched: c.now(), status: raw.StatusCode, body: raw.Body,
		contentType: storableType(raw.Header.Get("Content-Type")),
		negative:    negative,
	}
	if err := c.put(ctx, lk, rec); err != nil {
		// The answer is still good to serve; it is just not kept.
		c.log.Warn("store lookup answer", zap.String("kind", string(lk.op)), zap.Error(err))
	}
	return result{rec: rec}
}

// maxContentType bounds a stored Content-Type (the record keeps its
// length in two bytes); a longer one is stored as JSON's.
const maxContentType = 256

func storableType(ct string) string {
	if len(ct) > maxContentType {
		return "application/json"
	}
	return ct
}

// contradicts reports whether a negative answer for lk would replace a
// stored positive one that cannot become unknown: a registration number's
// TIN. Its "not found" (status 500, data null) is the same body as the
// lookup API's failure, so against a known TIN it is read as a failure.
func (c *Cache) contradicts(lk lookup) bool {
	if lk.op != client.OpTinInfo {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.index[lk.key()]
	return ok && !el.Value.(*entry).negative
}

func (c *Cache) noteFailure(lk lookup, err error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.index[lk.key()]; ok {
		el.Value.(*entry).failedAt = now
	}
	k := c.kinds[lk.op]
	k.lastErr, k.lastErrAt = err.Error(), now
	// Only a failed exchange (unreachable, timeout, 5xx) is slow to repeat;
	// an answer refused by judge came quickly. The lookup API reports its
	// failures inside 2xx bodies, so for it those count as well.
	_, exchange := client.ClassOf(err)
	if exchange || (!liveOp(lk.op) && (errors.Is(err, ErrBadAnswer) || errors.Is(err, ErrFailedAnswer))) {
		*c.downOf(lk.op) = downState{at: now, err: err}
	}
}

// downState is one upstream's known-down window: after a failed exchange
// at at, requests do not ask it for knownDownFor. err is nil once the
// upstream answers again.
type downState struct {
	at  time.Time
	err error
}

// downOf returns the window of op's upstream; c.mu is held.
func (c *Cache) downOf(op client.Op) *downState {
	switch {
	case liveOp(op):
		return &c.posDown
	case op == client.OpStockQr:
		return &c.stockDown
	}
	return &c.lookupDown
}

// knownDownFor is how long after a failed exchange an upstream is not
// asked by requests. It is longer than refreshRetry so that a STALE
// answer's background refresh, not a request, is the next to ask.
const knownDownFor = 2 * refreshRetry

// knownDown returns why op's upstream counts as down at now, or nil.
func (c *Cache) knownDown(op client.Op, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.downOf(op)
	if d.err == nil || now.Sub(d.at) >= knownDownFor {
		return nil
	}
	name := "the lookup API"
	switch {
	case liveOp(op):
		name = "PosAPI"
	case op == client.OpStockQr:
		name = "the stock API"
	}
	return fmt.Errorf("%s failed %s ago, not asked again yet: %w",
		name, now.Sub(d.at).Truncate(time.Second), d.err)
}

// put indexes rec as the most recently used entry, evicts the least
// recently used beyond MaxEntries, and writes both to the store. The write
// re-checks the index inside the transaction, so a put and an eviction of
// one key racing each other leave the store agreeing with the index.
func (c *Cache) put(ctx context.Context, lk lookup, rec *record) error {
	key := lk.key()
	c.mu.Lock()
	el, existed := c.index[key]
	if !existed {
		el = c.lru.PushFront(&entry{lk: lk})
		c.index[key] = el
		c.kinds[lk.op].entries++
	} else {
		c.lru.MoveToFront(el)
	}
	e := el.Value.(*entry)
	c.gen++
	gen := c.gen
	e.fetched, e.negative, e.gen, e.failedAt = rec.fetched, rec.negative, gen, time.Time{}
	c.kinds[lk.op].lastRefresh = rec.fetched
	c.downOf(lk.op).err = nil // the upstream answered
	var victims []lookup
	for c.lru.Len()-c.pinnedLocked() > c.cfg.MaxEntries {
		el := c.lru.Back()
		for pinned(el.Value.(*entry).lk.op) {
			el = el.Prev()
		}
		v := el.Value.(*entry)
		c.removeLocked(v)
		victims = append(victims, v.lk)
	}
	c.mu.Unlock()

	value := rec.encode()
	err := c.st.Update(ctx, func(tx *bbolt.Tx) error {
		root := tx.Bucket(store.BucketCache)
		c.mu.Lock()
		defer c.mu.Unlock()
		if el, ok := c.index[key]; ok && el.Value.(*entry).gen == gen {
			if err := root.Bucket([]byte(lk.op)).Put(lk.boltKey(), value); err != nil {
				return fmt.Errorf("put: %w", err)
			}
		}
		for _, v := range victims {
			if _, back := c.index[v.key()]; back {
				continue // put again since: its own write keeps it
			}
			if err := root.Bucket([]byte(v.op)).Delete(v.boltKey()); err != nil {
				return fmt.Errorf("evict: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		if !existed {
			c.forget(key, gen)
		}
		return fmt.Errorf("cache: store %s: %w", lk.op, err)
	}
	return nil
}

// pinned reports whether op's entries are exempt from eviction (and from
// MaxEntries): the two global lists, one entry each, which a till needs
// offline however many other lookups it made.
func pinned(op client.Op) bool { return op == client.OpBranchInfo || op == client.OpProductTaxCode }

// pinnedLocked counts the indexed pinned entries; c.mu is held.
func (c *Cache) pinnedLocked() int {
	return c.kinds[client.OpBranchInfo].entries + c.kinds[client.OpProductTaxCode].entries
}

// removeLocked drops e from the index; c.mu is held.
func (c *Cache) removeLocked(e *entry) {
	key := e.lk.key()
	if el, ok := c.index[key]; ok {
		c.lru.Remove(el)
		delete(c.index, key)
		c.kinds[e.lk.op].entries--
	}
}

// forget drops key from the index if its entry is still generation gen.
func (c *Cache) forget(key string, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.index[key]; ok {
		if e := el.Value.(*entry); e.gen == gen {
			c.removeLocked(e)
		}
	}
}

// touch marks key as just used and reports whether it is indexed.
func (c *Cache) touch(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.index[key]
	if ok {
		c.lru.MoveToFront(el)
	}
	return ok
}

// read returns lk's stored record, nil when there is none.
func (c *Cache) read(lk lookup) (*record, error) {
	var rec *record
	err := c.st.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(store.BucketCache).Bucket([]byte(lk.op))
		if b == nil {
			return nil
		}
		v := b.Get(lk.boltKey())
		if v == nil {
			return nil
		}
		r, err := decodeRecord(v, true)
		if err != nil {
			return err
		}
		rec = &r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cache: read %s: %w", lk.op, err)
	}
	return rec, nil
}

// scheduleRefresh asks Run's refresh workers to refetch lk, unless a
// refresh is already queued or running, or the last one failed less than
// refreshRetry ago. It never blocks.
func (c *Cache) scheduleRefresh(lk lookup) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.index[lk.key()]
	if !ok {
		return
	}
	e := el.Value.(*entry)
	if e.refreshing || now.Sub(e.failedAt) < refreshRetry {
		return
	}
	select {
	case c.refreshCh <- lk:
		e.refreshing = true
	default: // queue full: a later STALE hit asks again
	}
}

func (c *Cache) refreshDone(lk lookup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.index[lk.key()]; ok {
		el.Value.(*entry).refreshing = false
	}
}
