package syncer

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/queue"
)

// Upstream is the part of the tax service client the worker uses;
// *client.Client implements it.
type Upstream interface {
	CreateReceipt(ctx context.Context, body []byte) (*client.Receipt, error)
	DeleteReceipt(ctx context.Context, id, date string) (*client.Raw, error)
	Get(ctx context.Context, op client.Op, query url.Values, segments ...string) (*client.Raw, error)
}

// Queue is the part of *queue.Queue the worker uses. It is an interface so
// that tests can inject faults (a full disk) at the queue's edge.
type Queue interface {
	Claim(ctx context.Context, max int, now time.Time) ([]queue.Entry, error)
	FinishAndClaim(ctx context.Context, f queue.Finishing, max int, now time.Time) (queue.Entry, []queue.Entry, error)
	FinishWrite(ctx context.Context, f queue.Finishing) (durable func(ctx context.Context, max int, now time.Time) ([]queue.Entry, error), ok bool, err error)
	Latest(s queue.State, n int) ([]queue.Entry, error)
	OldestUnsent() (time.Time, bool, error)
	NothingClaimable(now time.Time) (bool, error)
	Notify() <-chan struct{}
}

// Config tunes the worker. Every zero value means the default given.
type Config struct {
	Concurrency     int           // sends in flight at once; zero: 2
	MinBackoff      time.Duration // first retry interval; zero: 1s
	MaxBackoff      time.Duration // cap of every retry interval; zero: 10s
	OnAmbiguous     string        // "retry" (zero) or "hold"
	MaxAmbiguous    int           // ambiguous attempts after which a receipt is held whatever OnAmbiguous says; zero: 3
	DownAfter       int           // consecutive failures (5xx, 408, lost answers; never a 429) that mark the upstream down; zero: 3
	ShutdownTimeout time.Duration // how long in-flight sends may finish at shutdown; zero: 10s
	// Answers is where the upstream's answers go, for the requests waiting
	// for them, replays and the late-answer route, which take them out
	// (package api); nil: a mailbox of the worker's own, default bounds.
	Answers        *Mailbox
	UnsentWarn     time.Duration // oldest unsent age that warns; zero: 24h
	UnsentCritical time.Duration // oldest unsent age that is critical; zero: 72h
	AlertInterval  time.Duration // how often the ageing is checked; zero: 30s
	PollInterval   time.Duration // how often entries waiting out a backoff are looked for; zero: 1s
	// Clock is the worker's time; nil means the system's (SystemClock).
	Clock Clock
	// Limits watches PosAPI's own limits (package posapi); nil: none.
	Limits Limits
	// ReserveRetry is how long a B2C receipt refused for an empty lottery
	// reserve waits before it is sent again; zero: DefaultReserveRetry.
	ReserveRetry time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 2
	}
	if c.DownAfter <= 0 {
		c.DownAfter = 3
	}
	if c.MaxAmbiguous <= 0 {
		c.MaxAmbiguous = 3
	}
	if c.OnAmbiguous == "" {
		c.OnAmbiguous = "retry"
	}
	def(&c.MinBackoff, time.Second)
	def(&c.MaxBackoff, 10*time.Second)
	def(&c.ShutdownTimeout, 10*time.Second)
	def(&c.UnsentWarn, 24*time.Hour)
	def(&c.UnsentCritical, 72*time.Hour)
	def(&c.AlertInterval, 30*time.Second)
	def(&c.PollInterval, time.Second)
	def(&c.ReserveRetry, DefaultReserveRetry)
	if c.Limits == nil {
		c.Limits = noLimits{}
	}
	return c
}

// Worker drains the queue upstream. Create it with New and run it with Run;
// the other methods may be called from any goroutine.
type Worker struct {
	q     Queue
	up    Upstream
	log   *zap.Logger
	m     *metrics.Metrics
	cfg   Config
	clock Clock // Config.Clock

	slots chan struct{} // one token per send in flight
	wake  chan struct{} // a slot came free or an outcome was recorded

	claimErr claimErrLog // drainLoop's goroutine only

	mu      sync.Mutex
	run     *runState // while Run drains: for TakeSlot (slot.go)
	link    linkState
	alert   alertState
	answers *Mailbox // Config.Answers; its own lock
	oldest  sighting // the oldest unsent entry as first seen (UnsentAge)
}

// linkState is what the worker knows of the upstream; guarded by Worker.mu.
type linkState struct {
	down        bool
	since       time.Time // when down last changed (start-up counts)
	lastSuccess time.Time
	lastError   string
	lastErrorAt time.Time // when lastError was recorded
	failures    int       // consecutive failed attempts (a 429 is an answer, not a failure)
	tooMany     int       // consecutive 429 answers
	pauseUntil  time.Time // a 429 asked for a pause: send nothing, probes included, before then
}

// setError records the last failure's text and when it happened.
func (l *linkState) setError(msg string, at time.Time) {
	l.lastError, l.lastErrorAt = msg, at
}

// New returns a worker; it starts nothing until Run. m may be nil.
func New(q Queue, up Upstream, cfg Config, log *zap.Logger, m *metrics.Metrics) *Worker {
	cfg = cfg.withDefaults()
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Answers == nil {
		cfg.Answers = NewMailbox(MailboxConfig{Now: cfg.Clock.Steady}, log, m)
	}
	w := &Worker{
		q: q, up: up, log: log.Named("sync"), m: m, cfg: cfg, clock: cfg.Clock, answers: cfg.Answers,
		slots: make(chan struct{}, cfg.Concurrency),
		wake:  make(chan struct{}, 1),
	}
	w.link.since = w.now()
	m.SetUpstreamUp(true)
	return w
}

// Run drains the queue until ctx ends, then lets the sends in flight (the
// outage probe included) finish for up to Config.ShutdownTimeout, counted
// from the moment ctx ends, and records their outcomes. Sends still running
// after that are cancelled and recorded as ambiguous. Run returns only when
// no goroutine of the worker is left.
func (w *Worker) Run(ctx context.Context) {
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	stopDeadline := w.shutdownDeadline(ctx, cancelSends)
	defer stopDeadline()
	w.seedLastSuccess()

	var sends, loops sync.WaitGroup
	loops.Add(1)
	go func() {
		defer loops.Done()
		w.alertLoop(ctx)
	}()
	w.mu.Lock()
	w.run = &runState{loopCtx: ctx, sendCtx: sendCtx, sends: &sends}
	w.mu.Unlock()
	w.drainLoop(ctx, sendCtx, &sends)
	w.mu.Lock()
	w.run = nil // no slot is taken from here on; those taken are in sends
	w.mu.Unlock()
	loops.Wait()
	sends.Wait()
}

// shutdownDeadline arranges for cancel to run Config.ShutdownTimeout after
// ctx ends. The returned function disarms it and returns only when neither
// the arming callback nor the timer's is running or can still run: with ctx
// already ended at Run's start, the callback may run after Run is done with
// everything else, and a timer it armed then would fire for a worker long
// gone.
func (w *Worker) shutdownDeadline(ctx context.Context, cancel context.CancelFunc) (disarm func()) {
	armed := make(chan *time.Timer, 1)
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		armed <- time.AfterFunc(w.cfg.ShutdownTimeout, func() {
			defer close(fired)
			w.log.Warn("shutdown timeout: cancelling sends in flight", zap.Duration("timeout", w.cfg.ShutdownTimeout))
			cancel()
		})
	})
	return func() {
		if stop() {
			return // the callback never ran and now never will
		}
		if t := <-armed; !t.Stop() {
			<-fired // it fired: wait until its log line and cancel are done
		}
	}
}

// seedLastSuccess starts "last success" from the newest finished entry, so
// a restart during an outage does not report that nothing was ever sent.
func (w *Worker) seedLastSuccess() {
	var newest time.Time
	for _, s := range []queue.State{queue.StateSent, queue.StatePayment, queue.StateDeleted} {
		entries, err := w.q.Latest(s, 1)
		if err != nil {
			w.log.Warn("read the last success", zap.Error(err))
			return
		}
		if len(entries) == 1 && entries[0].UpdatedAt.After(newest) {
			newest = entries[0].UpdatedAt
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if newest.After(w.link.lastSuccess) {
		w.link.lastSuccess = newest
	}
}

// drainLoop claims and dispatches entries until ctx ends.
func (w *Worker) drainLoop(ctx, sendCtx context.Context, sends *sync.WaitGroup) {
	probe := w.newBackoff()
	poll := time.NewTicker(w.cfg.PollInterval)
	defer poll.Stop()
	// waits: something may wait out a backoff or for its receipt, so the
	// loop polls. Any wake-up may bring such an entry; a poll's tick
	// reads the queue to see whether one still waits. (Read at every
	// wake-up, one for each sale a till sends as it is made, that reading
	// of the log's pending view was half the loop's CPU.)
	waits := true
	for ctx.Err() == nil {
		// A pause comes first: the upstream answered, and asked that
		// nothing be sent until then, not even a probe.
		if wait := w.pausedFor(); wait > 0 {
			clock.Sleep(ctx, wait)
			continue
		}
		if w.isDown() {
			if !clock.Sleep(ctx, probe.NextBackOff()) {
				return
			}
			if w.pausedFor() > 0 {
				continue // a send in flight got a 429 meanwhile
			}
			w.probe(ctx, sendCtx)
			if !w.isDown() {
				probe.Reset()
			}
			continue
		}
		if w.dispatch(ctx, sendCtx, sends) {
			continue // there may be more to claim right away
		}
		// Poll only while something waits out a backoff or for its
		// receipt: new work signals Notify. An idle daemon then has no
		// timer here after its last poll (a ticker not received from
		// does not fire). Armed again, the ticker starts a whole
		// interval: its tick overdue from an idle spell would come at
		// once and read the queue at every sale of a quiet till.
		var pollC <-chan time.Time
		if waits {
			pollC = poll.C
		}
		select {
		case <-ctx.Done():
			return
		case <-pollC:
			waits = w.unsentWaits()
			continue
		case <-w.q.Notify():
		case <-w.wake:
		}
		if !waits {
			poll.Reset(w.cfg.PollInterval)
			waits = true
		}
	}
}

// unsentWaits reports whether the queue holds unsent entries (or cannot
// be read), which may become claimable with time alone.
func (w *Worker) unsentWaits() bool {
	_, found, err := w.q.OldestUnsent()
	return found || err != nil
}

// dispatch claims as many entries as there are free slots and starts a
// send for each. It reports whether every free slot was filled.
func (w *Worker) dispatch(ctx, sendCtx context.Context, sends *sync.WaitGroup) bool {
	free := cap(w.slots) - len(w.slots)
	if free == 0 {
		return false
	}
	entries, err := w.q.Claim(ctx, free, w.wall())
	if err != nil {
		if ctx.Err() == nil {
			w.claimErr.log(w.log, "claim entries", err, w.now())
		}
		clock.Sleep(ctx, w.cfg.PollInterval)
		return false
	}
	for _, e := range entries {
		TracePhase("claimed", e.QueueID)
		w.slots <- struct{}{}
		sends.Add(1)
		go func() {
			defer sends.Done()
			w.sendLoop(ctx, sendCtx, e, true, nil)
		}()
	}
	return len(entries) == free
}

// probe sends one request while the upstream is thought down: the oldest
// due entry, or when there is none a PosAPI info request, so that the
// status shows the recovery even with an empty queue.
func (w *Worker) probe(ctx, sendCtx context.Context) {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	entries, err := w.q.Claim(ctx, 1, w.wall())
	if err != nil || len(entries) == 0 {
		<-w.slots
		if err != nil && ctx.Err() == nil {
			w.claimErr.log(w.log, "claim entry for probe", err, w.now())
		}
		w.ping(sendCtx)
		return
	}
	w.sendLoop(ctx, sendCtx, entries[0], false, nil)
}

// ping asks PosAPI for its info; any HTTP answer shows it reachable.
func (w *Worker) ping(ctx context.Context) {
	_, err := w.up.Get(ctx, client.OpInfo, nil)
	// The same rule as an entry's attempt: an answer other than a 5xx or
	// 408 shows the upstream reachable; a 429 also asks for a pause.
	class, classified := client.ClassOf(err)
	var ce *client.Error
	switch {
	case err == nil || (classified && class == client.Rejected):
		w.markUp(false)
	case errors.As(err, &ce) && ce.StatusCode == http.StatusTooManyRequests:
		w.throttled(ce.RetryAfter, err)
	default:
		w.log.Debug("probe failed", zap.Error(err))
	}
}

// newBackoff returns the jittered exponential backoff every wait uses.
func (w *Worker) newBackoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(w.cfg.MinBackoff),
		backoff.WithMaxInterval(w.cfg.MaxBackoff),
		backoff.WithMaxElapsedTime(0), // never give up
	)
}

// retryDelay is how long an entry waits after its n-th failed attempt:
// the n-th step of the same backoff, or the upstream's Retry-After.
func (w *Worker) retryDelay(n int, retryAfter time.Duration) time.Duration {
	b := w.newBackoff()
	var d time.Duration
	for i := 0; i < n && i < 64; i++ {
		d = b.NextBackOff()
	}
	return max(d, retryAfter)
}

// signal wakes the drain loop without blocking.
func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// claimErrLog keeps a claim that fails the same way on every poll (a
// database that refuses writes until restart) to one log line a minute.
type claimErrLog struct {
	last   string
	at     time.Time
	missed int
}

func (c *claimErrLog) log(log *zap.Logger, msg string, err error, now time.Time) {
	if err.Error() == c.last && now.Sub(c.at) < time.Minute {
		c.missed++
		return
	}
	log.Error(msg, zap.Error(err), zap.Int("sameErrorsSinceLastLine", c.missed))
	c.last, c.at, c.missed = err.Error(), now, 0
}
