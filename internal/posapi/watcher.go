// Package posapi watches PosAPI's own limits for the shop, before a sale
// fails: the lottery reserve PosAPI issues B2C receipts from
// (leftLotteries), its last send of data to the tax authority
// (lastSentDate), and the tax service's clock against ours. It owns what
// is known of them, the forecast of when the reserve runs out, receiptd's
// own sendData calls and the gate that keeps them apart from receipt
// sends.
//
// It promises that
//   - /rest/info is read at least every Config.CheckEvery while PosAPI
//     answers, every 10 s while PosAPI's pace is unknown, and sooner as
//     the forecast run-out nears (a quarter of the time left, never more
//     often than every 10 s); every 10 s while it fails, and at once when
//     PosAPI answers anything again; every /rest/info answer receiptd gets
//     anyway (the lookup cache's) counts as a read (ObserveInfo);
//   - with Config.AutoSendData, GET /rest/sendData is called when
//     lastSentDate is older than Config.SendAfter, fewer than
//     Config.MinLotteries are left, the reserve is forecast to run out
//     within Config.RefillBefore, or a B2C receipt was refused for an
//     empty reserve; at most once per Config.SendEvery, counted from its
//     own calls and from any move of PosAPI's lastSentDate (another till's
//     sendData), and never while a receipt is being sent (BeginSend); with
//     Config.SendSpread it first waits a random time, reads /rest/info
//     again and calls only if the need still holds, so many tills on one
//     PosAPI make one call for one need; its result is kept and
//     /rest/info read again;
//   - the forecast uses this till's B2C receipts of the last 24 hours,
//     counted per minute in a ring of fixed size, plus, on a shared
//     PosAPI, the other tills' pace (the fall of leftLotteries between
//     reads, refills cut out, less this till's receipts);
//   - a till known to be PosAPI's only client (its pace measured, nobody
//     else spending) behaves as it did before tills shared a PosAPI: no
//     spread, send_every from its own calls only;
//   - nothing it keeps or logs is a lottery number, QR data or a customer
//     identifier: it sees counts, dates and PosAPI's messages only.
//
// How a refusal for an empty reserve is recognised is decided in
// docs/decisions/posapi.md (ReserveRefusal).
package posapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/metrics"
)

// Upstream is what the watcher asks PosAPI; *client.Client implements it.
// Get returns the answer byte-for-byte, and for a non-2xx answer the
// *client.Raw AND an error.
type Upstream interface {
	Get(ctx context.Context, op client.Op, query url.Values, segments ...string) (*client.Raw, error)
}

var _ Upstream = (*client.Client)(nil)

// Config tunes the watcher (the [posapi] section). A zero duration means
// its default.
type Config struct {
	CheckEvery time.Duration // longest time between two /rest/info reads; zero: 10m
	// AutoSendData lets the watcher call sendData itself; false only
	// reports that one is needed.
	AutoSendData bool
	SendAfter    time.Duration // a lastSentDate older than this needs a sendData; zero: 12h
	// MinLotteries: fewer left than this needs a sendData; zero: only an
	// empty reserve does.
	MinLotteries int
	SendEvery    time.Duration // shortest time between two own sendData calls; zero: 1h
	MaxClockSkew time.Duration // the largest skew that is not a problem; zero: 2m
	// SendSpread is the longest random wait before an own sendData, after
	// which the need is checked again; zero: none (call at once).
	SendSpread time.Duration
	// RefillBefore: a reserve forecast to run out within this needs a
	// sendData; zero: the forecast alone asks for none.
	RefillBefore time.Duration
	// Upstream names PosAPI in the metrics' posapi label until /rest/info
	// gives its posNo (the upstream's host and port).
	Upstream string
	// Now is the wall clock (lastSentDate ages, when things happened);
	// nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.CheckEvery, 10*time.Minute)
	def(&c.SendAfter, 12*time.Hour)
	def(&c.SendEvery, time.Hour)
	def(&c.MaxClockSkew, 2*time.Minute)
	c.SendSpread, c.RefillBefore = max(c.SendSpread, 0), max(c.RefillBefore, 0)
	if c.MinLotteries < 0 {
		c.MinLotteries = 0
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// maxTick bounds the watch loop's pause. A sale that takes the estimate
// below min_lotteries wakes the loop at once (ReceiptIssued), as a
// refusal for an empty reserve does; a sendData or an info read that
// comes due otherwise (send_after passed, the forecast's run-out come
// within refill_before, a wall clock set forward) waits at most this long
// for a round. An idle till's loop wakes once a minute, not every 15 s as
// it did.
const maxTick = time.Minute

// Watcher keeps what is known of PosAPI's limits and acts on it. Create
// it with New and run it with Run; every other method may be called from
// any goroutine, and on a nil *Watcher does nothing (so the worker, the
// cache and the API work without one).
type Watcher struct {
	cfg  Config
	up   Upstream
	log  *zap.Logger
	m    *metrics.Metrics
	gate gate
	wake chan struct{}

	mu   sync.Mutex
	info infoState
	pace pace // this till's own B2C receipts
	wide wide // PosAPI's, all its clients together
	// pending is a need waiting out its spread; recheck asks the next
	// round to read /rest/info at once (PosAPI answers again).
	pending *pendingSend
	recheck bool
	// sentMoved is when PosAPI's lastSentDate was last seen to change
	// (zero: not since start); send_every counts from it.
	sentMoved time.Time
	clock     map[string]reading
	send      sendState
	// skewWarned and needWarned keep the log to one line per problem.
	skewWarned bool
	needWarned string
}

// infoState is what /rest/info said, and what happened since.
type infoState struct {
	known    bool
	left     int64     // leftLotteries as PosAPI wrote it
	sentRaw  string    // lastSentDate as PosAPI wrote it
	posNo    string    // PosAPI's posNo ("" when it gave none)
	sent     time.Time // parsed; zero when it could not be
	at       time.Time // when it was read
	issued   int64     // B2C receipts issued since it was read
	tried    time.Time // the last read, failed or not
	failing  string    // the last read's failure ("" when it worked)
	failedAt time.Time
	// empty: a B2C receipt was refused for an empty reserve since the
	// last read.
	empty bool
}

// New returns a watcher of PosAPI through up; it starts nothing. log and
// m may be nil.
func New(up Upstream, cfg Config, log *zap.Logger, m *metrics.Metrics) *Watcher {
	if log == nil {
		log = zap.NewNop()
	}
	w := &Watcher{
		cfg: cfg.withDefaults(), up: up, log: log.Named("posapi"), m: m,
		wake: make(chan struct{}, 1), clock: map[string]reading{},
	}
	w.pace.start = w.cfg.Now()
	m.WatchPosAPI(w.stats)
	return w
}

// Run watches until ctx ends: a round at start, then every few seconds
// (and at once when a refusal for an empty reserve wakes it), each reading
// /rest/info when it is due and calling sendData when it is needed. It
// returns when ctx ends and its round has finished.
func (w *Watcher) Run(ctx context.Context) {
	w.watchLoop(ctx)
}

// watchLoop's pause changes from round to round (sooner as the run-out
// nears, at once on a wake): clock.Wait.
func (w *Watcher) watchLoop(ctx context.Context) {
	for {
		w.round(ctx)
		if !clock.Wait(ctx, min(w.nextWake(w.cfg.Now()), w.cfg.SendEvery), w.wake) {
			return
		}
	}
}

// round reads /rest/info when due and sends the data when needed.
func (w *Watcher) round(ctx context.Context) {
	w.mu.Lock()
	infoDue := w.readDueLocked(w.cfg.Now())
	w.mu.Unlock()
	if infoDue {
		w.readInfo(ctx)
	}
	w.maybeSend(ctx)
}

// readInfo reads /rest/info now.
func (w *Watcher) readInfo(ctx context.Context) {
	now := w.cfg.Now()
	w.mu.Lock()
	w.info.tried, w.recheck = now, false
	w.mu.Unlock()
	raw, err := w.up.Get(ctx, client.OpInfo, nil)
	if err == nil {
		err = w.ObserveInfo(raw.Body)
	}
	if err == nil || ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	first := w.info.failing == ""
	w.info.failing, w.info.failedAt = err.Error(), now
	w.mu.Unlock()
	if first {
		w.log.Info("cannot read PosAPI's /rest/info; its lottery reserve and last send are as last read", zap.Error(err))
	}
}

// ErrNoReserve: a /rest/info answer without a whole-number leftLotteries.
var ErrNoReserve = errors.New("no leftLotteries in PosAPI's /rest/info answer")

// ObserveInfo takes what a /rest/info answer says of the reserve and the
// last send; the lookup cache hands over every answer it fetches. An
// answer without leftLotteries changes nothing (ErrNoReserve).
func (w *Watcher) ObserveInfo(body []byte) error {
	if w == nil {
		return nil
	}
	var info struct {
		LeftLotteries json.Number `json:"leftLotteries"`
		LastSentDate  *string     `json:"lastSentDate"`
		PosNo         *string     `json:"posNo"`
		PosID         json.Number `json:"posId"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&info); err != nil {
		return fmt.Errorf("read /rest/info: %w", err)
	}
	left, err := info.LeftLotteries.Int64()
	if err != nil {
		return fmt.Errorf("read /rest/info: %w", ErrNoReserve)
	}
	now := w.cfg.Now()
	st := infoState{known: true, left: left, at: now, tried: now}
	if info.LastSentDate != nil {
		st.sentRaw = *info.LastSentDate
		if t, err := client.ParseTime(st.sentRaw); err == nil {
			st.sent = t
		}
	}
	if info.PosNo != nil {
		st.posNo = clip(*info.PosNo)
	}
	w.mu.Lock()
	recovered := w.info.failing != ""
	ch := w.wide.observe(lastRead{ok: true, left: left, sentRaw: st.sentRaw, posID: clip(info.PosID.String()), at: now},
		w.info.issued, maxIntervalReads*w.cfg.CheckEvery)
	if ch.sentMoved {
		w.sentMoved = now
	}
	w.info = st
	w.mu.Unlock()
	if recovered {
		w.log.Info("PosAPI's /rest/info answers again", zap.Int64("leftLotteries", left), zap.String("lastSentDate", st.sentRaw))
	}
	if ch.restarted || (ch.refilled && !ch.sentMoved) {
		w.log.Info("PosAPI was restarted or replaced (its posId changed or its reserve rose without a send); its pace is measured afresh",
			zap.Int64("leftLotteries", left))
	}
	return nil
}

// ReceiptIssued counts a receipt the tax service issued; only B2C ones
// use a lottery number.
func (w *Watcher) ReceiptIssued(b2c bool) {
	if w == nil || !b2c {
		return
	}
	now := w.cfg.Now()
	w.mu.Lock()
	w.pace.add(now, 1)
	w.info.issued++
	left, known := w.estLeftLocked()
	// This receipt took the estimate below min_lotteries (to 0 when
	// that is 0): a need the next round acts on, now rather than at the
	// loop's next tick.
	crossed := known && left == max(int64(w.cfg.MinLotteries), 1)-1
	w.mu.Unlock()
	if crossed {
		w.signal()
	}
}

// ObserveTiming compares the tax service's clock in one answer with ours
// (client.Config.OnTiming).
func (w *Watcher) ObserveTiming(t client.Timing) {
	if w == nil {
		return
	}
	w.answered(t)
	seen := observe(t)
	if len(seen) == 0 {
		return
	}
	now := w.cfg.Now()
	w.mu.Lock()
	for _, s := range seen {
		w.clock[s.source] = reading{skew: s.skew, at: now}
	}
	skew, _, ok := w.skewLocked(now)
	over := ok && abs(skew) > w.cfg.MaxClockSkew
	warn := over && !w.skewWarned
	back := !over && w.skewWarned
	w.skewWarned = over
	w.mu.Unlock()
	switch {
	case warn:
		w.log.Warn("this computer's clock differs from the tax service's", zap.Duration("skew", skew),
			zap.Duration("max", w.cfg.MaxClockSkew), zap.String("fix", clockFix))
	case back:
		w.log.Info("this computer's clock agrees with the tax service's again", zap.Duration("skew", skew))
	}
}

// clockFix is the log's advice for a skewed clock.
const clockFix = "synchronise the clock: Windows: w32tm /resync; Linux: timedatectl set-ntp true (or chronyc makestep)"

// skewLocked is the skew that matters now: of the sources read within
// readingTTL, the one furthest from ours (any of the tax service's clocks
// disagreeing is a problem), and its source; mu held.
func (w *Watcher) skewLocked(now time.Time) (time.Duration, string, bool) {
	var best time.Duration
	var src string
	for _, s := range []string{SourceLookup, SourcePosAPI, SourceReceipt} {
		r, ok := w.clock[s]
		if !ok || now.Sub(r.at) > readingTTL {
			continue
		}
		if src == "" || abs(r.skew) > abs(best) {
			best, src = r.skew, s
		}
	}
	return best, src, src != ""
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// answered is told of every answer from the tax service: one from PosAPI
// while its /rest/info read failed (or was never made) means it is back
// (after an outage, or started after receiptd): read it at once.
func (w *Watcher) answered(t client.Timing) {
	if t.Op.Lookup() || t.Op == client.OpInfo {
		return
	}
	w.mu.Lock()
	back := (w.info.failing != "" || !w.info.known) && !w.info.tried.IsZero() && !w.recheck
	if back {
		w.recheck = true
	}
	w.mu.Unlock()
	if back {
		w.signal()
	}
}

// signal wakes the watch loop without blocking.
func (w *Watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
