package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func deleteBody(id, date string) string {
	if date == "" {
		return fmt.Sprintf(`{"id":%q}`, id)
	}
	return fmt.Sprintf(`{"id":%q,"date":%q}`, id, date)
}

func TestDeleteNotYetSentIsCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true})
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000100"), "Prefer", "wait=0")
	require.Equal(t, http.StatusAccepted, r.code)
	qid := r.h.Get(api.HeaderQueueID)

	d := e.do(http.MethodDelete, "/rest/receipt", deleteBody(qid, ""))
	require.Equal(t, http.StatusOK, d.code, "%s", d.body)
	require.Equal(t, qid, d.h.Get(api.HeaderQueueID))
	m := d.json(t)
	require.Equal(t, "cancelled", m["state"])
	require.Equal(t, qid, m["queueId"])

	// Asking again changes nothing.
	d = e.do(http.MethodDelete, "/rest/receipt", deleteBody(qid, ""))
	require.Equal(t, http.StatusOK, d.code, "%s", d.body)
	require.Equal(t, "cancelled", d.json(t)["state"])

	// Start the worker and let it drain a later receipt: the cancelled one
	// never reaches the simulator.
	e.runWorker()
	later := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000101"))
	require.Equal(t, http.StatusOK, later.code, "%s", later.body)
	require.Equal(t, 1, e.sim.Requests(sim.RouteCreateReceipt))
	require.Equal(t, "000101", e.sim.Receipts()[0].BillIDSuffix)
	require.Equal(t, 0, e.sim.Requests(sim.RouteDeleteReceipt))
	require.Equal(t, "cancelled", e.entry(qid)["state"])
}

func TestDeleteWhileBeingSentRunsAfterTheSend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{sim: sim.Options{Latency: 700 * time.Millisecond}})
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000110"), "Prefer", "wait=0")
	require.Equal(t, http.StatusAccepted, r.code)
	qid := r.h.Get(api.HeaderQueueID)
	e.waitState(qid, queue.StateSending)

	d := e.do(http.MethodDelete, "/rest/receipt", deleteBody(qid, ""), "Prefer", "wait=8")
	require.Equal(t, http.StatusOK, d.code, "the delete's own upstream answer within the wait: %s", d.body)
	did := d.h.Get(api.HeaderQueueID)
	require.NotEqual(t, qid, did, "a delete entry of its own")
	require.Equal(t, "deleted", d.json(t)["state"])

	sent := e.waitState(qid, queue.StateSent)
	upstreamID := sent["outcome"].(map[string]any)["id"]
	require.Equal(t, []string{upstreamID.(string)}, e.sim.Deleted())
	del := e.entry(did)
	require.Equal(t, "delete", del["kind"])
	require.Equal(t, "deleted", del["state"])
	require.Equal(t, qid, del["deleteTarget"])
}

func TestDeleteOfSentReceiptIsQueuedAndSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000120"))
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	m := r.json(t)
	upstreamID, date := m["id"].(string), m["date"].(string)

	// By upstream id; the date defaults to the receipt's own.
	d := e.do(http.MethodDelete, "/rest/receipt", deleteBody(upstreamID, ""))
	require.Equal(t, http.StatusOK, d.code, "%s", d.body)
	did := d.h.Get(api.HeaderQueueID)
	require.Equal(t, []string{upstreamID}, e.sim.Deleted())
	ent := e.waitState(did, queue.StateDeleted)
	require.Equal(t, date, ent["deleteDate"])

	// Deleting again is answered from the finished delete.
	again := e.do(http.MethodDelete, "/rest/receipt", deleteBody(upstreamID, ""))
	require.Equal(t, http.StatusOK, again.code, "%s", again.body)
	require.Equal(t, did, again.h.Get(api.HeaderQueueID))
	require.Equal(t, 1, e.sim.Requests(sim.RouteDeleteReceipt))
}

func TestDeleteOfUnknownIDIsQueued(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	const unknown = "000000000000000000000000000000042"
	// Upstream down: queued, 202 at once.
	require.NoError(t, e.sim.SetFaults(sim.Faults{Down: true}))
	d := e.do(http.MethodDelete, "/rest/receipt", deleteBody(unknown, "2026-01-02 10:00:00"))
	require.Equal(t, http.StatusAccepted, d.code, "%s", d.body)
	did := d.h.Get(api.HeaderQueueID)
	m := d.json(t)
	require.Equal(t, did, m["queueId"])
	require.Contains(t, []any{"delete_queued", "sending"}, m["state"])

	// Back up: the delete is sent; the simulator does not know the id and
	// refuses it.
	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	ent := e.waitState(did, queue.StateDeleteRejected)
	require.Equal(t, unknown, ent["deleteId"])
	require.Equal(t, "2026-01-02 10:00:00", ent["deleteDate"])
	require.Equal(t, 1, e.sim.Requests(sim.RouteDeleteReceipt))

	// Online, the upstream's own refusal comes back within the wait.
	d = e.do(http.MethodDelete, "/rest/receipt", deleteBody("999", ""))
	require.Equal(t, http.StatusBadRequest, d.code, "%s", d.body)
	require.NotEmpty(t, d.h.Get(api.HeaderQueueID))
	require.Contains(t, d.json(t)["message"], "not found")
}
