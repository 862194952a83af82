package api_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestAnOnlineSaleIsSentByItsOwnRequest: a sale whose accept carries its
// claim is sent by the request that waits for it (Slot.SendHere), with
// the queue's write-ahead log (its outcome a record of the log) and
// without (a commit). While the tax service answers within accept.wait
// the POS gets its answer; when it takes longer, the POS is answered when
// the wait ends (202, the entry sending, the connection closed after it,
// since the request's goroutine goes on sending), and the sale is then
// sent once and its outcome recorded.
func TestAnOnlineSaleIsSentByItsOwnRequest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		q    func(t *testing.T) queue.Options
	}{
		{"outcome in the log", func(t *testing.T) queue.Options { return queue.Options{LogDir: filepath.Join(t.TempDir(), "wal")} }},
		// Segments that hold a sale's record but not its outcome's, which
		// is then committed to the file by the send's goroutine.
		{"outcome too large for the log", func(t *testing.T) queue.Options {
			return queue.Options{LogDir: filepath.Join(t.TempDir(), "wal"), LogSegmentSize: segmentFor(t)}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Two send slots: the second sale finds one free even while
			// the first's goroutine still records its outcome.
			e := newEnv(t, envOpts{api: api.Options{Wait: 400 * time.Millisecond}, queue: c.q(t), worker: syncer.Config{Concurrency: 2}})

			r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("fast-1"))
			require.Equal(t, http.StatusOK, r.code, "%s", r.body)
			require.False(t, r.close, "the connection stays open for the next sale")
			fast := r.json(t)
			require.Equal(t, "SUCCESS", fast["status"])

			require.NoError(t, e.sim.SetFaults(sim.Faults{Latency: 1500 * time.Millisecond}))
			r = e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("slow-1"))
			require.Len(t, e.sim.Receipts(), 1, "answered when the wait ended, before the tax service answered")
			require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
			require.True(t, r.close, "Connection: close")
			slow := r.json(t)
			require.Equal(t, string(queue.StateSending), slow["state"])
			id := slow["queueId"].(string)
			require.Equal(t, id, r.h.Get(api.HeaderQueueID))
			sent := e.waitState(id, queue.StateSent)

			issued := e.sim.Receipts()
			require.Len(t, issued, 2, "each sale issued once")
			require.Equal(t, fast["id"], issued[0].ID)
			require.Equal(t, issued[1].ID, sent["outcome"].(map[string]any)["id"])
		})
	}
}

// segmentFor is a log segment size that holds the record of a sale of
// testkit.Receipt and not the record of its outcome.
func segmentFor(t *testing.T) int64 {
	return int64(32 + 16 + 250 + len(testkit.Receipt("slow-1")))
}

// TestAStopAnswersAnOnlineSaleStillBeingSent: a Serve that stops while a
// request sends its own sale answers that request 202 at once (the sale
// stored, sending) and returns without waiting for the tax service; the
// sale is then sent once.
func TestAStopAnswersAnOnlineSaleStillBeingSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: api.Options{Wait: 10 * time.Second}, queue: queue.Options{LogDir: filepath.Join(t.TempDir(), "wal")}})
	require.NoError(t, e.sim.SetFaults(sim.Faults{Latency: 3 * time.Second}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln) }()
	answered := make(chan saleAnswer, 1)
	go func() {
		code, err := posPost(t, "http://"+ln.Addr().String(), "stop-1")
		answered <- saleAnswer{code, err}
	}()
	require.Eventually(t, func() bool { return e.counts()[queue.StateSending] == 1 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	a := <-answered
	require.NoError(t, a.err, "answered, not cut off")
	require.Equal(t, http.StatusAccepted, a.code)
	require.Empty(t, e.sim.Receipts(), "answered before the tax service answered")
	require.NoError(t, <-served)
	require.Empty(t, e.sim.Receipts(), "the stop did not wait for the tax service")
	require.Eventually(t, func() bool { return len(e.sim.Receipts()) == 1 }, 10*time.Second, 10*time.Millisecond, "then sent, once")
	require.Eventually(t, func() bool { return e.counts()[queue.StateSent] == 1 }, 10*time.Second, 10*time.Millisecond)
}

type saleAnswer struct {
	code int
	err  error
}

// TestAPOSThatLeftGetsItsAnswerLater: a POS that gives up while its
// request sends its sale is not answered, and the tax service's answer
// waits for it on the late-answer route, as for a sale sent by the worker.
func TestAPOSThatLeftGetsItsAnswerLater(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: api.Options{Wait: 10 * time.Second}, queue: queue.Options{LogDir: filepath.Join(t.TempDir(), "wal")}})
	require.NoError(t, e.sim.SetFaults(sim.Faults{Latency: time.Second}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/rest/receipt", strings.NewReader(testkit.Receipt("gone-1")))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the POS gave up")

	var id string
	require.Eventually(t, func() bool {
		page := e.do(http.MethodGet, "/receiptd/entries?state=sent", "").json(t)
		entries, _ := page["entries"].([]any)
		if len(entries) != 1 {
			return false
		}
		id = entries[0].(map[string]any)["queueId"].(string)
		return true
	}, 10*time.Second, 20*time.Millisecond)
	r := e.do(http.MethodGet, "/receiptd/entries/"+id+"/answer", "")
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	require.Equal(t, "SUCCESS", r.json(t)["status"])
	require.Equal(t, e.sim.Receipts()[0].ID, r.json(t)["id"])
}
