package cache

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/store"
)

// Sentinel errors. They are wrapped, so test with errors.Is.
var (
	// ErrBadRequest means a lookup request cannot be sent as asked (a bad
	// classification path, a missing or oversized tin / regNo). It is
	// answered with 400; nothing is sent upstream.
	ErrBadRequest = errors.New("bad lookup request")
	// ErrBadRecord means a stored cache record cannot be decoded. New drops
	// such records; they are never served.
	ErrBadRecord = errors.New("undecodable cache record")
	// ErrBadAnswer means the upstream answered 2xx with a body that is not
	// JSON (a captive portal's page, say). It is never cached; a stale entry
	// is served instead, or a 503.
	ErrBadAnswer = errors.New("upstream answer is not JSON")
	// ErrFailedAnswer means the upstream answered 2xx with a body that
	// reports a failure: a lookup envelope whose status is not 200, a
	// global list or classification without data, a PosAPI body with
	// status "ERROR". It is treated as ErrBadAnswer is.
	ErrFailedAnswer = errors.New("upstream answer reports a failure")
	// ErrConfig means Config holds a negative duration or size, or a
	// refresh interval for a kind the cache does not keep.
	ErrConfig = errors.New("invalid cache configuration")
)

// Upstream is what the cache asks; *client.Client implements it. Get returns
// the answer byte-for-byte, and for a non-2xx answer the *client.Raw AND an
// error whose class client.ClassOf reads.
type Upstream interface {
	Get(ctx context.Context, op client.Op, query url.Values, segments ...string) (*client.Raw, error)
	// SaveOprMerchants posts body as it is, answering as Get does.
	SaveOprMerchants(ctx context.Context, body []byte) (*client.Raw, error)
}

// Config configures a Cache. The zero value of every field means its
// default.
type Config struct {
	// Refresh is the refresh interval per lookup kind; kinds missing from
	// it (or zero) use DefaultRefresh. PosAPI's info and bank accounts are
	// asked for on every request; their interval only sets where MaxStale
	// starts counting.
	Refresh map[client.Op]time.Duration
	// NegativeTTL is the refresh interval of negative answers (data null:
	// an unknown TIN or regNo). Zero means 10 minutes.
	NegativeTTL time.Duration
	// MaxStale bounds how long past its refresh interval an entry is still
	// served while the upstream fails. Zero means without limit.
	MaxStale time.Duration
	// MaxEntries bounds the number of entries besides the district and
	// product tax code lists, which are never evicted. Zero means 10000.
	MaxEntries int
	// OnInfo, when set, is handed every /rest/info answer fetched (a
	// POS's, the warm-up's), so PosAPI's lottery reserve and last send are
	// known without asking again (package posapi). It must be quick.
	OnInfo func(body []byte)
}

// Defaults used for zero Config fields.
const (
	DefaultNegativeTTL = 10 * time.Minute
	DefaultMaxEntries  = 10000
)

// DefaultRefresh returns the default refresh interval of every cached kind;
// the map is a fresh copy.
func DefaultRefresh() map[client.Op]time.Duration {
	return map[client.Op]time.Duration{
		client.OpBranchInfo:     24 * time.Hour,
		client.OpProductTaxCode: 24 * time.Hour,
		client.OpMerchantInfo:   time.Hour,
		client.OpTinInfo:        24 * time.Hour,
		client.OpInfo:           time.Hour,
		client.OpBankAccounts:   24 * time.Hour,
		client.OpClassification: 168 * time.Hour,
		client.OpStockQr:        168 * time.Hour,
	}
}

func (cfg Config) withDefaults() (Config, error) {
	out := cfg
	out.Refresh = DefaultRefresh()
	for op, d := range cfg.Refresh {
		if !cachedOp(op) {
			return out, fmt.Errorf("cache: refresh interval for %q, not a cached lookup: %w", op, ErrConfig)
		}
		if d < 0 {
			return out, fmt.Errorf("cache: refresh interval of %s is negative: %w", op, ErrConfig)
		}
		if d > 0 {
			out.Refresh[op] = d
		}
	}
	if cfg.NegativeTTL < 0 || cfg.MaxStale < 0 || cfg.MaxEntries < 0 {
		return out, fmt.Errorf("cache: negative_ttl, max_stale and max_entries must not be negative: %w", ErrConfig)
	}
	if out.NegativeTTL == 0 {
		out.NegativeTTL = DefaultNegativeTTL
	}
	if out.MaxEntries == 0 {
		out.MaxEntries = DefaultMaxEntries
	}
	return out, nil
}

// refreshRetry is how long a failed refresh of one entry waits before a
// STALE hit may start another, so an outage is not hammered once per hit.
const refreshRetry = 30 * time.Second

// entry is the in-memory index record of one cached lookup.
type entry struct {
	lk         lookup
	fetched    time.Time
	negative   bool
	gen        uint64    // bumped by each put; a put's write checks it
	failedAt   time.Time // last failed refresh
	refreshing bool      // a background refresh is queued or running
}

// kindState is per-kind bookkeeping for Freshness.
type kindState struct {
	entries     int
	lastRefresh time.Time
	lastErr     string
	lastErrAt   time.Time
}

// KindStatus is one kind's line on the status page.
type KindStatus struct {
	Kind        client.Op
	Entries     int
	Refresh     time.Duration // the kind's refresh interval
	OldestAge   time.Duration // age of the oldest entry's fetch; 0 when empty
	LastRefresh time.Time     // last successful fetch since start; zero if none
	LastError   string        // last failed fetch since start; "" if none
	LastErrorAt time.Time
}

// Cache is the lookup cache. It is safe for concurrent use.
type Cache struct {
	st  *store.Store
	up  Upstream
	cfg Config
	log *zap.Logger
	m   *metrics.Metrics // nil: no metrics
	now func() time.Time

	mu    sync.Mutex
	lru   *list.List // of *entry, most recently used at the front
	index map[string]*list.Element
	kinds map[client.Op]*kindState
	gen   uint64

	// Known-down windows, one per upstream, never shared: PosAPI (the
	// live kinds), the excise stock API (stock QR) and the public lookup
	// API (every other kind).
	posDown, stockDown, lookupDown downState

	flights flightGroup

	warmedAt time.Time // the last warm-up's end; under mu
	// warmFailing: the last warm-up could not fetch everything (warmLoop's
	// goroutine only).
	warmFailing bool
	refreshCh   chan lookup // STALE hits ask Run's refresh workers here
	tinMu       sync.Mutex
	tins        map[string]struct{} // merchant TINs seen, for warm-up
	tinCh       chan struct{}       // a new TIN was noted
	runOnce     sync.Once
}

// maxNotedTINs bounds the warm-up set; a till sees few merchants.
const maxNotedTINs = 1000

// New opens the cache in st's BucketCache bucket and rebuilds the in-memory
// index from it (most recently fetched first), dropping undecodable records
// and trimming to MaxEntries. It starts no goroutine. log and m may be nil.
func New(ctx context.Context, st *store.Store, up Upstream, cfg Config, log *zap.Logger, m *metrics.Metrics) (*Cache, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	c := &Cache{
		st: st, up: up, cfg: cfg, log: log.Named("cache"), m: m, now: time.Now,
		lru: list.New(), index: make(map[string]*list.Element),
		kinds:     make(map[client.Op]*kindState),
		refreshCh: make(chan lookup, 64),
		tins:      make(map[string]struct{}), tinCh: make(chan struct{}, 1),
	}
	for _, op := range cachedOps {
		c.kinds[op] = &kindState{}
	}
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// load creates the kind buckets, reads every record's header into the
// index and deletes undecodable records and those beyond MaxEntries.
func (c *Cache) load(ctx context.Context) error {
	var entries []*entry
	var drop map[client.Op][][]byte
	err := c.st.Update(ctx, func(tx *bbolt.Tx) error {
		root := tx.Bucket(store.BucketCache)
		if root == nil {
			return fmt.Errorf("bucket %q missing", store.BucketCache)
		}
		var err error
		if entries, drop, err = scan(root); err != nil {
			return err
		}
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].fetched.After(entries[j].fetched) })
		var surplus []*entry
		entries, surplus = trim(entries, c.cfg.MaxEntries)
		for _, e := range surplus {
			drop[e.lk.op] = append(drop[e.lk.op], e.lk.boltKey())
		}
		for op, keys := range drop {
			for _, k := range keys {
				if err := root.Bucket([]byte(op)).Delete(k); err != nil {
					return fmt.Errorf("drop %s record: %w", op, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cache: load index: %w", err)
	}
	for _, e := range entries {
		c.index[e.lk.key()] = c.lru.PushBack(e)
		c.kinds[e.lk.op].entries++
		if e.lk.op == client.OpMerchantInfo && !e.negative && len(c.tins) < maxNotedTINs {
			c.tins[e.lk.param] = struct{}{}
		}
	}
	dropped := 0
	for _, keys := range drop {
		dropped += len(keys)
	}
	if dropped > 0 {
		c.log.Info("dropped undecodable or surplus cache records", zap.Int("records", dropped))
	}
	return nil
}

// trim keeps the pinned entries and the first limit others, in order, and
// returns the rest as surplus.
func trim(entries []*entry, limit int) (keep, surplus []*entry) {
	others := 0
	for _, e := range entries {
		switch {
		case pinned(e.lk.op):
			keep = append(keep, e)
		case others < limit:
			others++
			keep = append(keep, e)
		default:
			surplus = append(surplus, e)
		}
	}
	return keep, surplus
}

// scan creates every kind's bucket under root and reads its records'
// headers; undecodable records' keys come back in drop.
func scan(root *bbolt.Bucket) (entries []*entry, drop map[client.Op][][]byte, err error) {
	drop = map[client.Op][][]byte{}
	for _, op := range cachedOps {
		b, err := root.CreateBucketIfNotExists([]byte(op))
		if err != nil {
			return nil, nil, fmt.Errorf("create bucket %s: %w", op, err)
		}
		err = b.ForEach(func(k, v []byte) error {
			e, err := loadEntry(op, k, v)
			if err != nil {
				drop[op] = append(drop[op], append([]byte(nil), k...))
				return nil
			}
			entries = append(entries, e)
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("scan %s: %w", op, err)
		}
	}
	return entries, drop, nil
}

func loadEntry(op client.Op, k, v []byte) (*entry, error) {
	if len(k) == 0 || string(k[:1]) != keyPrefix {
		return nil, ErrBadRecord
	}
	lk, err := lookupFromKey(op, string(k[1:]))
	if err != nil {
		return nil, err
	}
	r, err := decodeRecord(v, false)
	if err != nil {
		return nil, err
	}
	return &entry{lk: lk, fetched: r.fetched, negative: r.negative}, nil
}

// Freshness reports, per kind, what the status page shows.
func (c *Cache) Freshness() []KindStatus {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	oldest := map[client.Op]time.Time{}
	for el := c.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		if o, ok := oldest[e.lk.op]; !ok || e.fetched.Before(o) {
			oldest[e.lk.op] = e.fetched
		}
	}
	out := make([]KindStatus, 0, len(cachedOps))
	for _, op := range cachedOps {
		k := c.kinds[op]
		s := KindStatus{Kind: op, Entries: k.entries, Refresh: c.cfg.Refresh[op],
			LastRefresh: k.lastRefresh, LastError: k.lastErr, LastErrorAt: k.lastErrAt}
		if o, ok := oldest[op]; ok {
			s.OldestAge = max(now.Sub(o), 0)
		}
		out = append(out, s)
	}
	return out
}

// ttl is how long a record counts as fresh.
func (c *Cache) ttl(op client.Op, negative bool) time.Duration {
	if negative {
		return c.cfg.NegativeTTL
	}
	return c.cfg.Refresh[op]
}
