package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/cache"
	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
	"github.com/receiptd/receiptd/internal/syncer"
)

// envOpts configure newEnv.
type envOpts struct {
	api       api.Options
	sim       sim.Options
	worker    syncer.Config
	answers   syncer.MailboxConfig
	queue     queue.Options
	noWorker  bool // the worker is built but not run until env.runWorker
	noLookups bool
	realCache bool // the lookup routes are served by the real lookup cache
	metrics   bool // GET /metrics serves a real registry
	control   func() control.Status
	warmth    func() cache.Warmth
	fleet     func() api.FleetState
	update    api.Updater
}

// env is the whole stack of the end-to-end tests: the simulator as the
// upstream, the real client, a real store and queue in t.TempDir(), the real
// sync worker and the API on 127.0.0.1:0.
type env struct {
	t      *testing.T
	sim    *sim.Sim
	st     *store.Store
	q      *queue.Queue
	w      *syncer.Worker
	srv    *api.Server
	base   string
	logs   *observer.ObservedLogs
	tins   chan string
	runCtx context.Context
	stop   []func()
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	s := sim.New(o.sim)
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	st := storetest.Open(t)
	q, err := queue.Open(context.Background(), st, o.queue)
	require.NoError(t, err)
	if o.queue.LogDir != "" {
		// After the API and the worker stop (cleanups run last first), before
		// the store closes and the log's directory goes (Windows keeps an
		// open file from being removed).
		t.Cleanup(func() { require.NoError(t, q.Close(context.Background())) })
	}
	cl, err := client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: s.URL(), StockBaseURL: s.URL(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core)
	if o.worker.MinBackoff == 0 {
		o.worker.MinBackoff, o.worker.MaxBackoff = 100*time.Millisecond, 300*time.Millisecond
	}
	if o.worker.PollInterval == 0 {
		o.worker.PollInterval = 50 * time.Millisecond
	}
	o.worker.Answers = syncer.NewMailbox(o.answers, log, nil)
	w := syncer.New(q, cl, o.worker, log, nil)
	e := &env{t: t, sim: s, st: st, q: q, w: w, logs: logs, tins: make(chan string, 100)}
	deps := api.Deps{Store: st, Queue: q, Worker: w, Answers: o.worker.Answers, Log: log, NoteTIN: func(tin string) {
		select {
		case e.tins <- tin:
		default:
		}
	}}
	if o.metrics {
		deps.Metrics = metrics.New()
	}
	deps.Control, deps.Warmth, deps.Fleet, deps.Update = o.control, o.warmth, o.fleet, o.update
	if o.realCache {
		c, err := cache.New(context.Background(), st, cl, cache.Config{}, log, nil)
		require.NoError(t, err)
		deps.Lookups = c.Handler()
	} else if !o.noLookups {
		deps.Lookups = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "lookup "+r.URL.Path)
		})
	}
	if o.api.Wait == 0 {
		o.api.Wait = 5 * time.Second // accept.wait's default in config
	}
	e.srv = api.New(deps, o.api)
	e.srv.SetReady(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	e.runCtx = ctx
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
		for _, f := range e.stop {
			f()
		}
	})
	if !o.noWorker {
		e.runWorker()
	}
	return e
}

// runWorker starts the sync worker; it is stopped at cleanup.
func (e *env) runWorker() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.w.Run(e.runCtx)
	}()
	e.stop = append(e.stop, func() { <-done })
}

// resp is an answer read whole.
type resp struct {
	code  int
	h     http.Header
	body  []byte
	close bool // the answer said Connection: close (net/http takes it out of h)
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// do sends a request with Content-Type application/json (for a body) and
// the given header pairs; a pair with an empty value removes the header.
// Every request has a 10s deadline: a test that expects an answer "at once"
// while accept.wait is 30s fails if the server waits.
func (e *env) do(method, path, body string, hdr ...string) resp {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.base+path, rd)
	require.NoError(e.t, err)
	if method == http.MethodPost || method == http.MethodDelete {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err, "%s %s", method, path)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return resp{code: res.StatusCode, h: res.Header, body: b, close: res.Close}
}

// entry reads one entry through the API.
func (e *env) entry(id string) map[string]any {
	e.t.Helper()
	r := e.do(http.MethodGet, "/receiptd/entries/"+id, "")
	require.Equal(e.t, http.StatusOK, r.code, "%s", r.body)
	return r.json(e.t)
}

// waitState polls an entry until it reaches state.
func (e *env) waitState(id string, state queue.State) map[string]any {
	e.t.Helper()
	var last map[string]any
	require.Eventually(e.t, func() bool {
		last = e.entry(id)
		return last["state"] == string(state)
	}, 10*time.Second, 10*time.Millisecond, "entry %s never reached %s", id, state)
	return last
}

// counts is the queue's counts by state.
func (e *env) counts() map[queue.State]int {
	e.t.Helper()
	c, err := e.q.Counts()
	require.NoError(e.t, err)
	return c
}

// logText is every log line written so far, fields included.
func (e *env) logText() string {
	var b bytes.Buffer
	for _, l := range e.logs.All() {
		b.WriteString(l.Message)
		for k, v := range l.ContextMap() {
			fmt.Fprintf(&b, " %s=%v", k, v)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
