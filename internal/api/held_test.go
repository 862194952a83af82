package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestHeldMeansHeld: a receipt whose answer was lost, with on_ambiguous =
// "hold", is not described as being sent on; its retry needs
// ?confirm=checked, and the refusal says what to check first. The worker
// polls only every hour, so the retry through the API must wake it.
func TestHeldMeansHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{worker: syncer.Config{OnAmbiguous: "hold", PollInterval: time.Hour}})
	require.NoError(t, e.sim.SetFaults(sim.Faults{DropRate: 1}))
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000700"))
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	m := r.json(t)
	id := m["queueId"].(string)
	e.waitState(id, queue.StateHeld)
	if m["state"] == string(queue.StateHeld) {
		require.Contains(t, m["message"], "An operator must check")
		require.NotContains(t, m["message"], "keeps sending")
	}
	replay := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000700")).json(t)
	require.Contains(t, replay["message"], "answer was lost")
	require.Contains(t, replay["message"], "An operator must check")
	require.NotContains(t, replay["message"], "keeps sending")
	require.Contains(t, e.entry(id)["note"], "retry -force "+id)

	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	refused := e.do(http.MethodPost, "/receiptd/entries/"+id+"/retry", "")
	require.Equal(t, http.StatusConflict, refused.code)
	require.Contains(t, refused.json(t)["message"], "check with the tax service")
	require.Equal(t, string(queue.StateHeld), e.entry(id)["state"], "still held")

	ok := e.do(http.MethodPost, "/receiptd/entries/"+id+"/retry?confirm=checked", "")
	require.Equal(t, http.StatusOK, ok.code, "%s", ok.body)
	e.waitState(id, queue.StateSent)
}

// TestReplayOfRejectedReceiptAfterItsAnswerLeftMemory: once the upstream's
// refusal is no longer held in memory, a replay answers from what the
// queue kept: the same status code and message, nothing sent again.
func TestReplayOfRejectedReceiptAfterItsAnswerLeftMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{answers: syncer.MailboxConfig{ResultTTL: time.Nanosecond}})
	require.NoError(t, e.sim.SetFaults(sim.Faults{RejectNext: 1, RejectMessage: "districtCode: unknown"}))
	first := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000710"))
	require.Equal(t, http.StatusBadRequest, first.code, "the upstream's refusal: %s", first.body)
	qid := first.h.Get(api.HeaderQueueID)
	e.waitState(qid, queue.StateRejected)
	time.Sleep(time.Millisecond) // past ResultTTL

	again := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000710"))
	require.Equal(t, "true", again.h.Get(api.HeaderReplayed))
	require.Equal(t, http.StatusBadRequest, again.code, "%s", again.body)
	m := again.json(t)
	require.Equal(t, "ERROR", m["status"])
	require.Equal(t, "districtCode: unknown", m["message"])
	require.Equal(t, qid, m["queueId"], "answered from the queue, not from memory")
	require.Equal(t, 1, e.sim.Requests(sim.RouteCreateReceipt), "nothing sent again")
}
