package api_test

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// queuedWhileDown posts a receipt while the simulator is down and returns
// its queueId and the answer.
func (e *env) queuedWhileDown(suffix string) (string, resp) {
	e.t.Helper()
	require.NoError(e.t, e.sim.SetFaults(sim.Faults{Down: true}))
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt(suffix))
	qid := r.h.Get(api.HeaderQueueID)
	require.NotEmpty(e.t, qid, "%d %s", r.code, r.body)
	return qid, r
}

// lateAnswer asks the late-answer route until it stops saying 202.
func (e *env) lateAnswer(qid string) resp {
	e.t.Helper()
	var r resp
	require.Eventually(e.t, func() bool {
		r = e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "")
		return r.code != http.StatusAccepted
	}, 10*time.Second, 10*time.Millisecond)
	return r
}

func TestLateAnswerOnceAfterAnOutage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	qid, first := e.queuedWhileDown("000100")
	require.Equal(t, http.StatusAccepted, first.code, "%s", first.body)
	require.Contains(t, first.json(t)["message"], "/receiptd/entries/"+qid+"/answer")

	pending := e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "")
	require.Equal(t, http.StatusAccepted, pending.code, "%s", pending.body)
	require.Equal(t, qid, pending.h.Get(api.HeaderQueueID))
	require.NotEmpty(t, pending.h.Get(api.HeaderRetryAfter))
	require.Contains(t, []any{"queued", "sending"}, pending.json(t)["state"])

	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	late := e.lateAnswer(qid)
	require.Equal(t, http.StatusOK, late.code, "%s", late.body)
	require.Equal(t, "200", late.h.Get(api.HeaderUpstreamStatus))
	require.Equal(t, qid, late.h.Get(api.HeaderQueueID))
	issued := e.sim.Receipts()
	require.Len(t, issued, 1)
	m := late.json(t)
	require.Equal(t, "SUCCESS", m["status"])
	require.Equal(t, issued[0].ID, m["id"])
	require.Equal(t, issued[0].Lottery, m["lottery"])
	require.Equal(t, issued[0].QRData, m["qrData"])

	gone := e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "")
	require.Equal(t, http.StatusGone, gone.code, "given once: %s", gone.body)
	g := gone.json(t)
	require.Equal(t, "sent", g["state"])
	require.Equal(t, issued[0].ID, g["outcome"].(map[string]any)["id"])
	require.NotContains(t, string(gone.body), issued[0].Lottery)

	// The POS that lost the late answer on the wire can still send the same
	// request again within the replay window.
	rep := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000100"))
	require.Equal(t, http.StatusOK, rep.code, "%s", rep.body)
	require.Equal(t, "true", rep.h.Get(api.HeaderReplayed))
	require.Equal(t, issued[0].Lottery, rep.json(t)["lottery"])

	unknown := e.do(http.MethodGet, "/receiptd/entries/Q000000009999/answer", "")
	require.Equal(t, http.StatusNotFound, unknown.code, "%s", unknown.body)

	db, err := os.ReadFile(e.st.Path())
	require.NoError(t, err)
	require.NotContains(t, string(db), issued[0].Lottery, "lottery on disk")
	require.NotContains(t, string(db), issued[0].QRData, "QR data on disk")
	require.NotContains(t, e.logText(), issued[0].Lottery, "lottery in the log")
	require.NotContains(t, e.logText(), issued[0].QRData, "QR data in the log")
}

func TestLateAnswerOfARejectedReceipt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	qid, _ := e.queuedWhileDown("000101")
	require.NoError(t, e.sim.SetFaults(sim.Faults{RejectNext: 1, RejectMessage: "districtCode: unknown"}))
	late := e.lateAnswer(qid)
	require.Equal(t, http.StatusOK, late.code, "%s", late.body)
	require.Equal(t, "400", late.h.Get(api.HeaderUpstreamStatus))
	m := late.json(t)
	require.Equal(t, "ERROR", m["status"])
	require.Equal(t, "districtCode: unknown", m["message"])
	e.waitState(qid, queue.StateRejected)
	require.Equal(t, http.StatusGone, e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "").code)
}

func TestAnswerGivenInTimeIsNotGivenLate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000102"))
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	qid := r.h.Get(api.HeaderQueueID)
	late := e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "")
	require.Equal(t, http.StatusGone, late.code, "%s", late.body)
	require.Contains(t, late.json(t)["message"], "already given")
}

func TestLateAnswerOfADelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	const unknown = "000000000000000000000000000000123"
	require.NoError(t, e.sim.SetFaults(sim.Faults{Down: true}))
	d := e.do(http.MethodDelete, "/rest/receipt", deleteBody(unknown, "2026-01-02 10:00:00"))
	require.Equal(t, http.StatusAccepted, d.code, "%s", d.body)
	qid := d.h.Get(api.HeaderQueueID)
	require.Equal(t, http.StatusAccepted, e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "").code)
	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	late := e.lateAnswer(qid)
	require.Equal(t, http.StatusOK, late.code, "the tax service's refusal of the delete: %s", late.body)
	require.Equal(t, "ERROR", late.json(t)["status"])
}

func TestLateAnswersAreBoundedInBytes(t *testing.T) {
	t.Parallel()
	// No answer fits in one byte: every one is pushed out at once, and
	// the log names the entry (never the answer).
	e := newEnv(t, envOpts{answers: syncer.MailboxConfig{MaxResultBytes: 1}})
	qid, _ := e.queuedWhileDown("000103")
	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	late := e.lateAnswer(qid)
	require.Equal(t, http.StatusGone, late.code, "%s", late.body)
	require.Contains(t, late.json(t)["message"], "no longer held")
	require.Contains(t, e.logText(), "dropped from memory to stay within its bounds; the late-answer route will say 410 queueId="+qid)
}

// TestRetriedEntryForgetsItsOldAnswer: an operator's retry of a rejected
// receipt makes its kept refusal stale. Neither the late-answer route nor a
// replay may give that refusal while the receipt waits to be sent again (a
// POS told "refused" would ring the sale anew, and the retry may issue it).
func TestRetriedEntryForgetsItsOldAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	qid, _ := e.queuedWhileDown("000104")
	require.NoError(t, e.sim.SetFaults(sim.Faults{RejectNext: 1, RejectMessage: "districtCode: unknown"}))
	e.waitState(qid, queue.StateRejected)

	require.NoError(t, e.sim.SetFaults(sim.Faults{Down: true}))
	retried := e.do(http.MethodPost, "/receiptd/entries/"+qid+"/retry", "")
	require.Equal(t, http.StatusOK, retried.code, "%s", retried.body)

	late := e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "")
	require.Equal(t, http.StatusAccepted, late.code, "the refusal before the retry is no answer now: %s", late.body)
	rep := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000104"))
	require.Equal(t, http.StatusAccepted, rep.code, "%s", rep.body)
	require.Equal(t, "true", rep.h.Get(api.HeaderReplayed))

	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	now := e.lateAnswer(qid)
	require.Equal(t, http.StatusOK, now.code, "%s", now.body)
	require.Equal(t, "SUCCESS", now.json(t)["status"], "the retry's own answer")
}

// TestLateAnswerOfACancelledReceipt: a receipt cancelled by a delete while
// its last attempt's failure is still remembered is gone (410, state
// cancelled), not "queued, ask again later".
func TestLateAnswerOfACancelledReceipt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	qid, _ := e.queuedWhileDown("000105")
	require.Eventually(t, func() bool { return len(e.entry(qid)["attempts"].([]any)) > 0 }, 10*time.Second, 10*time.Millisecond)
	e.waitState(qid, queue.StateQueued)
	c := e.do(http.MethodDelete, "/rest/receipt", deleteBody(qid, ""))
	require.Equal(t, http.StatusOK, c.code, "%s", c.body)

	late := e.do(http.MethodGet, "/receiptd/entries/"+qid+"/answer", "")
	require.Equal(t, http.StatusGone, late.code, "%s", late.body)
	require.Equal(t, string(queue.StateCancelled), late.json(t)["state"])
}
