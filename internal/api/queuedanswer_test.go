package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// requirePosError checks that r is PosAPI's error envelope and nothing
// else, and returns its message.
func requirePosError(t *testing.T, r resp) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "%s", r.body)
	require.Len(t, m, 2, "only status and message: %s", r.body)
	require.Equal(t, "ERROR", m["status"])
	msg, ok := m["message"].(string)
	require.True(t, ok, "%s", r.body)
	return msg
}

func errorMode(o envOpts) envOpts {
	o.api.QueuedAnswer = api.QueuedAnswerError
	return o
}

func TestQueuedAnswerErrorUntilSentThenTheRealAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, errorMode(envOpts{}))
	qid, first := e.queuedWhileDown("000200")
	require.Equal(t, http.StatusServiceUnavailable, first.code, "%s", first.body)
	msg := requirePosError(t, first)
	require.Contains(t, msg, qid)
	require.Contains(t, msg, "new bill number")
	require.Equal(t, "10", first.h.Get(api.HeaderRetryAfter))

	again := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000200"))
	require.Equal(t, http.StatusServiceUnavailable, again.code, "still unsent: %s", again.body)
	require.Equal(t, "true", again.h.Get(api.HeaderReplayed))
	require.Equal(t, qid, again.h.Get(api.HeaderQueueID))
	requirePosError(t, again)

	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	var real resp
	require.Eventually(t, func() bool {
		real = e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000200"))
		return real.code != http.StatusServiceUnavailable
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusOK, real.code, "%s", real.body)
	issued := e.sim.Receipts()
	require.Len(t, issued, 1, "sent once, however often it was asked for")
	require.Equal(t, issued[0].Lottery, real.json(t)["lottery"])
	require.Equal(t, http.StatusGone, e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "").code,
		"the replay gave the answer: the late-answer route does not give it again")
}

func TestQueuedAnswerErrorForADelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, errorMode(envOpts{}))
	require.NoError(t, e.sim.SetFaults(sim.Faults{Down: true}))
	const unknown = "000000000000000000000000000000124"
	d := e.do(http.MethodDelete, "/rest/receipt", deleteBody(unknown, "2026-01-02 10:00:00"))
	require.Equal(t, http.StatusServiceUnavailable, d.code, "%s", d.body)
	require.Contains(t, requirePosError(t, d), "delete stored as "+d.h.Get(api.HeaderQueueID))
	require.NotEmpty(t, d.h.Get(api.HeaderRetryAfter))

	// A delete of a receipt not sent yet is final at once: 200, as in "202"
	// mode.
	qid, _ := e.queuedWhileDown("000201")
	c := e.do(http.MethodDelete, "/rest/receipt", deleteBody(qid, ""))
	require.Equal(t, http.StatusOK, c.code, "%s", c.body)
	// The cancelled sale sent again is an error, never a 2xx.
	rep := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000201"))
	require.Equal(t, http.StatusConflict, rep.code, "%s", rep.body)
	require.Contains(t, requirePosError(t, rep), "cancelled")
}

func TestQueuedAnswerErrorReplayOnceTheAnswerIsGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, errorMode(envOpts{answers: syncer.MailboxConfig{ResultTTL: time.Nanosecond}}))
	first := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000202"))
	require.Equal(t, http.StatusOK, first.code, "%s", first.body)
	again := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000202"))
	require.Equal(t, http.StatusConflict, again.code, "never a 2xx a POS would print without lottery: %s", again.body)
	msg := requirePosError(t, again)
	require.Contains(t, msg, first.json(t)["id"].(string))
	require.Contains(t, msg, "Do NOT ring it again")
}

func TestQueuedAnswerErrorForAHeldReceipt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, errorMode(envOpts{worker: syncer.Config{OnAmbiguous: "hold"}}))
	require.NoError(t, e.sim.SetFaults(sim.Faults{DropRate: 1}))
	first := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000203"))
	qid := first.h.Get(api.HeaderQueueID)
	require.NotEmpty(t, qid, "%d %s", first.code, first.body)
	e.waitState(qid, "held")
	again := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000203"))
	require.Equal(t, http.StatusServiceUnavailable, again.code, "held may still be sent: %s", again.body)
	require.Contains(t, requirePosError(t, again), "operator must check it")
	late := e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "")
	require.Equal(t, http.StatusAccepted, late.code, "%s", late.body)
	require.Equal(t, "held", late.json(t)["state"])
	require.Contains(t, late.json(t)["message"], "none comes until an operator acts", "not \"ask again later\" alone")
}
