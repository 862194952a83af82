package syncer_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// Backoff bounds the tests below rely on: cenkalti/backoff's default
// randomization (±50%) and multiplier (1.5), so the n-th interval is at
// least MinBackoff·1.5^(n-1)·0.5. The tests check lower bounds only, which
// a loaded machine can only widen.
const (
	spacedMin = 400 * time.Millisecond
	spacedMax = 2 * time.Second
)

// TestServerErrorSpacesTheEntrysRetries: after a 5xx an entry waits out its
// own backoff step before it is sent again, growing with each failure;
// without the per-entry backoff it would be sent again at once.
func TestServerErrorSpacesTheEntrysRetries(t *testing.T) {
	t.Parallel()
	up := &scripted{answer: func(n int, w http.ResponseWriter) {
		if n < 3 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		success(w)
	}}
	cfg := fastConfig()
	cfg.Concurrency, cfg.DownAfter = 1, 100 // stays up: only the entry's own backoff spaces the tries
	cfg.MinBackoff, cfg.MaxBackoff = spacedMin, spacedMax
	r := newRig(t, cfg, sim.Options{})
	r.useScripted(t, cfg, up)
	e := r.enqueue(testkit.Receipt("bo1"))
	r.start()
	r.waitSettled(20 * time.Second)

	at := up.arrivals()
	require.Len(t, at, 4, "three 500s, then the success")
	for i, least := range []time.Duration{spacedMin / 2, spacedMin * 3 / 4, spacedMin * 9 / 8} {
		require.GreaterOrEqual(t, at[i+1].Sub(at[i]), least, "try %d came before the entry's backoff step", i+2)
	}
	require.True(t, r.w.Status().Up)
	require.Len(t, r.get(e.QueueID).Attempts, 4)
}

// TestTooManyRequestsWithoutRetryAfterPauses: a 429 without Retry-After
// pauses all sending for a backoff step (growing with each 429 in a row),
// never one request per queued entry at once.
func TestTooManyRequestsWithoutRetryAfterPauses(t *testing.T) {
	t.Parallel()
	up := &scripted{answer: func(n int, w http.ResponseWriter) {
		if n < 2 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		success(w)
	}}
	cfg := fastConfig()
	cfg.Concurrency = 1
	cfg.MinBackoff, cfg.MaxBackoff = spacedMin, spacedMax
	r := newRig(t, cfg, sim.Options{})
	r.useScripted(t, cfg, up)
	r.enqueueN("tmp", 3)
	r.start()
	r.waitSettled(20 * time.Second)

	at := up.arrivals()
	require.Len(t, at, 5, "two 429s, then the three receipts")
	require.GreaterOrEqual(t, at[1].Sub(at[0]), spacedMin/2, "nothing is sent during the first pause")
	require.GreaterOrEqual(t, at[2].Sub(at[1]), spacedMin*3/4, "the second 429 in a row pauses longer")
}
