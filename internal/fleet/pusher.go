package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/clock"
)

// Request limits: one request carries at most maxRequest bytes of
// compressed WriteRequest (a few hundred intervals of an idle till) and
// at most maxRecords intervals, so catching up after a long outage is
// many bounded requests, never one huge one.
const (
	maxRequest = 1 << 20 // compressed, as stored; about 5 MiB uncompressed
	maxRecords = 500
)

// Config is how the push runs. The zero value is not usable.
type Config struct {
	// URL is the remote-write endpoint (the head office).
	URL string
	// Interval is the time between samples (the configuration holds it
	// to at least a second).
	Interval time.Duration
	// Labels are added to every series (a series' own label wins);
	// "instance" among them replaces Instance.
	Labels map[string]string
	// Instance is the instance label; empty: none.
	Instance string
	// Headers are set on every request (say Authorization); their values
	// are never logged.
	Headers map[string]string
	// Client sends the requests; it is the push's own (the daemon builds
	// it with the CA file and proxy, see NewClient).
	Client *http.Client
	// Dir is the buffer's directory; created if missing.
	Dir string
	// Buffer is the oldest sample kept unsent; BufferBytes bounds the
	// buffer's files.
	Buffer      time.Duration
	BufferBytes int64
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// LastSuccess is the last success of the push this one takes over
	// from, to the same URL (a config applied in place); zero: none. The
	// buffer's position needs no carrying: it is on disk.
	LastSuccess time.Time
}

// Status is the push's state, for /receiptd/status and the metrics.
type Status struct {
	Enabled bool
	// LastSuccess is when the head office last accepted a request; zero:
	// never since start.
	LastSuccess time.Time
	// BufferedSamples are waiting on disk; OldestBuffered is the sample
	// time of the oldest (zero when none).
	BufferedSamples uint64
	OldestBuffered  time.Time
	// Dropped counts unsent samples dropped: past Buffer or BufferBytes,
	// refused by the head office (4xx), or damaged on disk.
	Dropped uint64
	// BufferBytes is the size of the buffer's files.
	BufferBytes int64
	// LastError is why the last push was not accepted (no answer, a 5xx
	// or 429 retried, another 4xx that dropped its samples); "" when it
	// was, or before the first. FailingSince is when the pushes began
	// failing, the first failure after the last success (zero: not
	// failing). With LastSuccess zero and LastError "", the first push is
	// still to come.
	LastError    string
	FailingSince time.Time
}

// Pusher samples and pushes. Build it with New; Run it once. Methods on a
// nil *Pusher report a disabled push.
type Pusher struct {
	cfg    Config
	src    prometheus.Gatherer
	log    *zap.Logger
	buf    *buffer
	enc    encoder
	wake   chan struct{}
	lastOK atomic.Int64 // Unix nanoseconds; 0: never
	// refusalLogged: a 4xx refusal was logged; cleared by a success, so
	// a refusing head office is logged once, not once a request.
	refusalLogged atomic.Bool

	// mu guards failure: why and since when the pushes fail, for Status.
	mu      sync.Mutex
	failure struct {
		err   string
		since time.Time
	}
}

// New opens the buffer (refusing a directory it cannot use) and returns a
// Pusher of src's series. It starts nothing.
func New(cfg Config, src prometheus.Gatherer, log *zap.Logger) (*Pusher, error) {
	if cfg.URL == "" || cfg.Interval <= 0 || cfg.Client == nil || cfg.Dir == "" || cfg.BufferBytes <= 0 || cfg.Buffer <= 0 {
		return nil, errors.New("fleet: URL, Interval, Client, Dir, Buffer and BufferBytes are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b, err := openBuffer(bufferOptions{dir: cfg.Dir, maxBytes: cfg.BufferBytes, maxAge: cfg.Buffer.Milliseconds()})
	if err != nil {
		return nil, err
	}
	p := &Pusher{cfg: cfg, src: src, log: log.Named("fleet"), buf: b, wake: make(chan struct{}, 1)}
	if !cfg.LastSuccess.IsZero() {
		p.lastOK.Store(cfg.LastSuccess.UnixNano())
	}
	p.enc.external = externalLabels(cfg.Labels, cfg.Instance)
	return p, nil
}

// Run samples every Interval and sends until ctx ends, then closes the
// buffer. What is unsent stays on disk for the next start.
func (p *Pusher) Run(ctx context.Context) {
	p.log.Info("pushing this till's receiptd_ series to the head office; the first success and every change between failing and working are logged",
		zap.String("url", p.cfg.URL), zap.Duration("interval", p.cfg.Interval), zap.Any("labels", p.cfg.Labels))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.sampleLoop(ctx) }()
	go func() { defer wg.Done(); p.sendLoop(ctx) }()
	wg.Wait()
	if err := p.buf.close(); err != nil {
		p.log.Warn("close the fleet buffer", zap.Error(err))
	}
}

// Status reports the push's state; on a nil Pusher, Enabled is false.
func (p *Pusher) Status() Status {
	if p == nil {
		return Status{}
	}
	s := p.buf.stats()
	st := Status{Enabled: true, BufferedSamples: s.samples, Dropped: s.dropped, BufferBytes: s.bytes}
	if s.oldest != 0 {
		st.OldestBuffered = time.UnixMilli(s.oldest).UTC()
	}
	if ns := p.lastOK.Load(); ns != 0 {
		st.LastSuccess = time.Unix(0, ns).UTC()
	}
	p.mu.Lock()
	st.LastError, st.FailingSince = p.failure.err, p.failure.since
	p.mu.Unlock()
	return st
}

// noteFailure records a push the head office did not accept; err nil: it
// accepted one, and the pushes no longer fail.
func (p *Pusher) noteFailure(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.failure.err, p.failure.since = "", time.Time{}
		return
	}
	if p.failure.since.IsZero() {
		p.failure.since = p.cfg.Now().UTC()
	}
	p.failure.err = err.Error()
}

// sampleLoop takes a sample at once, then every Interval.
func (p *Pusher) sampleLoop(ctx context.Context) {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	failing := false
	for {
		err := p.sample()
		switch {
		case err != nil && !failing:
			p.log.Error("cannot buffer the fleet samples; retrying every interval", zap.Error(err))
		case err == nil && failing:
			p.log.Info("fleet samples are buffered again")
		}
		failing = err != nil
		select {
		case p.wake <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample gathers, encodes and appends one interval.
func (p *Pusher) sample() error {
	families, err := p.src.Gather()
	if err != nil && len(families) == 0 {
		return fmt.Errorf("gather: %w", err)
	}
	ts := p.cfg.Now().UnixMilli()
	raw, n := p.enc.encode(families, ts)
	if n == 0 {
		return nil
	}
	return p.buf.append(record{ts: ts, samples: n, payload: snappy.Encode(nil, raw)})
}

// newBackOff is the retry pace while the head office fails.
func (p *Pusher) newBackOff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = time.Second
	b.MaxInterval = min(max(p.cfg.Interval, 5*time.Second), 5*time.Minute)
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}

// sendLoop sends the buffer's records oldest first, as long as there are
// any, backing off while the head office fails.
func (p *Pusher) sendLoop(ctx context.Context) {
	bo := p.newBackOff()
	failing := false
	for ctx.Err() == nil {
		b, err := p.buf.peek(p.cfg.Now().UnixMilli(), maxRequest, maxRecords)
		if err == nil && len(b.recs) > 0 {
			err = p.sendBatch(ctx, b)
		}
		var wait time.Duration
		var retry *retryable
		switch {
		case errors.As(err, &retry):
			if !failing && ctx.Err() == nil {
				p.log.Warn("the head office does not accept the fleet samples; they wait on disk, retrying with backoff",
					zap.Error(err), zap.String("url", p.cfg.URL))
			}
			failing = true
			wait = max(bo.NextBackOff(), retry.after)
		case err != nil:
			p.log.Error("fleet buffer", zap.Error(err))
			wait = p.cfg.Interval
		case len(b.recs) > 0:
			if failing {
				p.log.Info("the head office accepts the fleet samples again")
			}
			failing = false
			bo.Reset()
			continue // more may be waiting
		default:
			select {
			case <-ctx.Done():
			case <-p.wake:
			}
			continue
		}
		clock.Sleep(ctx, wait)
	}
}

// retryable is a failure worth retrying (5xx, 429, no answer).
type retryable struct {
	err   error
	after time.Duration // Retry-After, when the answer gave one
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// sendBatch sends one batch and acknowledges it in the buffer: accepted,
// or (any 4xx but 429) refused for good.
func (p *Pusher) sendBatch(ctx context.Context, b batch) error {
	raw := make([]byte, 0, 64<<10)
	for _, pl := range b.payloads {
		// Each payload passed its CRC, so it decodes unless the writer
		// itself was wrong; such a record is left out of the request.
		if out, err := snappy.Decode(nil, pl); err == nil {
			raw = append(raw, out...)
		}
	}
	code, after, err := p.post(ctx, snappy.Encode(nil, raw))
	switch {
	case err != nil:
		if ctx.Err() == nil { // a stop is no failure of the head office
			p.noteFailure(err)
		}
		return &retryable{err: err}
	case code/100 == 2:
		p.noteFailure(nil)
		if p.lastOK.Swap(p.cfg.Now().UnixNano()) == 0 {
			p.log.Info("the head office accepted this till's first fleet samples", zap.String("url", p.cfg.URL), zap.Int("samples", b.samples))
		}
		p.refusalLogged.Store(false)
		return p.buf.ack(b.last(), false)
	case code == http.StatusTooManyRequests || code >= 500:
		err := fmt.Errorf("push to the head office: HTTP %d", code)
		p.noteFailure(err)
		return &retryable{err: err, after: after}
	default:
		p.noteFailure(fmt.Errorf("the head office refused the samples: HTTP %d (they are dropped, not retried)", code))
		if !p.refusalLogged.Swap(true) {
			p.log.Error("the head office refused fleet samples; they are dropped (counted in receiptd_fleet_dropped_samples_total), and further refusals are not logged until a push succeeds",
				zap.Int("status", code), zap.Int("samples", b.samples), zap.String("url", p.cfg.URL))
		}
		return p.buf.ack(b.last(), true)
	}
}

// post sends one compressed WriteRequest and returns the status code and
// Retry-After; an error means no answer.
func (p *Pusher) post(ctx context.Context, body []byte) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, fmt.Errorf("push request: %w", err)
	}
	for k, v := range p.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "receiptd")
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("push to the head office: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, retryAfter(resp.Header), nil
}

// retryAfter reads a Retry-After in seconds; 0 when absent or a date.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, 5*time.Minute)
}

// Close releases the buffer of a Pusher that will not Run (Run closes it
// itself). It may be called more than once.
func (p *Pusher) Close() error {
	if p == nil {
		return nil
	}
	return p.buf.close()
}
