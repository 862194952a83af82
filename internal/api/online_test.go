package api_test

import (
	"net/http"
	"path/filepath"
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
