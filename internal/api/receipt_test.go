package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func TestCreateOnlineReturnsUpstreamAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000001"))
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	qid := r.h.Get(api.HeaderQueueID)
	require.Regexp(t, `^Q\d{12}$`, qid)
	m := r.json(t)
	require.Equal(t, "SUCCESS", m["status"])
	require.Regexp(t, `^\d{33}$`, m["id"])
	require.Regexp(t, `^SN \d{8}$`, m["lottery"])
	require.NotEmpty(t, m["qrData"])

	issued := e.sim.Receipts()
	require.Len(t, issued, 1)
	require.Equal(t, issued[0].Lottery, m["lottery"], "the simulator's own answer, verbatim")
	require.JSONEq(t, testkit.Receipt("000001"), string(issued[0].Body), "forwarded as sent")

	ent := e.waitState(qid, queue.StateSent)
	require.Equal(t, "receipt", ent["kind"])
	require.Equal(t, m["id"], ent["outcome"].(map[string]any)["id"])
	require.Equal(t, "5317878", <-e.tins, "the merchant TIN is passed on to the lookup cache")

	logs := e.logText()
	require.Contains(t, logs, qid)
	require.NotContains(t, logs, m["lottery"].(string))
	require.NotContains(t, logs, m["qrData"].(string))
	require.NotContains(t, logs, "88776655443", "customerTin is masked")
	require.Contains(t, logs, "*****443")
}

func TestCreateUpstreamDownAnswers202AtOnce(t *testing.T) {
	t.Parallel()
	// accept.wait is 30s and every request has a 10s deadline: a 202 proves
	// the API did not wait for an upstream known to be down.
	e := newEnv(t, envOpts{api: api.Options{Wait: 30 * time.Second}})
	require.NoError(t, e.sim.SetFaults(sim.Faults{Down: true}))
	var ids []string
	for _, suffix := range []string{"000010", "000011", "000012"} {
		r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt(suffix))
		require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
		m := r.json(t)
		require.Equal(t, r.h.Get(api.HeaderQueueID), m["queueId"])
		require.Contains(t, []any{"queued", "sending"}, m["state"])
		require.NotEmpty(t, m["message"])
		ids = append(ids, m["queueId"].(string))
	}
	st := e.do(http.MethodGet, "/receiptd/status", "").json(t)
	require.Equal(t, "down", st["upstream"].(map[string]any)["state"])

	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	for _, id := range ids {
		e.waitState(id, queue.StateSent)
	}
	require.Len(t, e.sim.Receipts(), 3)
}

func TestCreateReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	first := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000020"))
	require.Equal(t, http.StatusOK, first.code, "%s", first.body)
	require.Empty(t, first.h.Get(api.HeaderReplayed))

	// The same receipt, indented differently: the same entry, the held answer.
	again := e.do(http.MethodPost, "/rest/receipt", strings.ReplaceAll(testkit.Receipt("000020"), ",", ", "))
	require.Equal(t, http.StatusOK, again.code, "%s", again.body)
	require.Equal(t, "true", again.h.Get(api.HeaderReplayed))
	require.Equal(t, first.h.Get(api.HeaderQueueID), again.h.Get(api.HeaderQueueID))
	require.JSONEq(t, string(first.body), string(again.body), "the lottery and QR data again, for printing")
	require.Len(t, e.sim.Receipts(), 1, "nothing sent twice")

	// With an Idempotency-Key the key is the header, whatever the body's ids.
	k1 := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000021"), api.HeaderIdempotencyKey, "sale-77")
	require.Equal(t, http.StatusOK, k1.code, "%s", k1.body)
	k2 := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000021"), api.HeaderIdempotencyKey, "sale-77")
	require.Equal(t, "true", k2.h.Get(api.HeaderReplayed))
	require.Equal(t, k1.h.Get(api.HeaderQueueID), k2.h.Get(api.HeaderQueueID))
	require.Len(t, e.sim.Receipts(), 2)
}

func TestReplayAfterAnswerLeftMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{answers: syncer.MailboxConfig{ResultTTL: time.Nanosecond}})
	first := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000030"))
	require.Equal(t, http.StatusOK, first.code, "%s", first.body)
	again := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000030"))
	require.Equal(t, http.StatusAccepted, again.code, "%s", again.body)
	require.Equal(t, "true", again.h.Get(api.HeaderReplayed))
	m := again.json(t)
	require.Equal(t, first.h.Get(api.HeaderQueueID), m["queueId"])
	require.Equal(t, "sent", m["state"])
	require.Contains(t, m["message"], "lottery number and QR data are no longer held")
	require.Equal(t, first.json(t)["id"], m["outcome"].(map[string]any)["id"])
	require.NotContains(t, string(again.body), "lottery\"")
}

func TestReplayOfRejectedReceipt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	bad := strings.Replace(testkit.Receipt("000031"), `"totalAmount":12345.6789012345678901,"merchantTin"`, `"totalAmount":1,"merchantTin"`, 1)
	first := e.do(http.MethodPost, "/rest/receipt", bad)
	require.Equal(t, http.StatusBadRequest, first.code, "the upstream's refusal: %s", first.body)
	require.Equal(t, "ERROR", first.json(t)["status"])
	qid := first.h.Get(api.HeaderQueueID)
	e.waitState(qid, queue.StateRejected)
	again := e.do(http.MethodPost, "/rest/receipt", bad)
	require.Equal(t, "true", again.h.Get(api.HeaderReplayed))
	require.Equal(t, http.StatusBadRequest, again.code, "%s", again.body)
	require.Contains(t, again.json(t)["message"], "totalAmount")

	// An operator's retry puts it back; it is refused again.
	rt := e.do(http.MethodPost, "/receiptd/entries/"+qid+"/retry", "")
	require.Equal(t, http.StatusOK, rt.code, "%s", rt.body)
	require.Equal(t, "queued", rt.json(t)["state"])
	e.waitState(qid, queue.StateRejected)
}

func TestCreateConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	require.Equal(t, http.StatusOK, e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000040")).code)
	other := strings.Replace(testkit.Receipt("000040"), `"totalVat":1`, `"totalVat":2`, 1)
	r := e.do(http.MethodPost, "/rest/receipt", other)
	require.Equal(t, http.StatusConflict, r.code, "%s", r.body)
	require.Contains(t, r.json(t)["message"], "different body")
	require.Regexp(t, `as Q\d{12}, now (sent|sending|queued) \(GET /receiptd/entries/Q\d{12}\)`, r.json(t)["message"], "names the entry that holds the key")

	require.Equal(t, http.StatusOK, e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000041"), api.HeaderIdempotencyKey, "k").code)
	r = e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000042"), api.HeaderIdempotencyKey, "k")
	require.Equal(t, http.StatusConflict, r.code, "%s", r.body)
	require.Len(t, e.sim.Receipts(), 2)
}

func TestPreferWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true, worker: syncer.Config{Concurrency: 10},
		api: api.Options{Wait: 30 * time.Second, MaxWait: 2 * time.Second}})
	// The worker is not running: no answer can come, so each request waits
	// exactly as long as it is allowed to and answers 202. (Ten send slots:
	// the receipts queued before do not count as a backlog.)
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000050"), "Prefer", "wait=0")
	require.Equal(t, http.StatusAccepted, r.code)
	require.Equal(t, "wait=0", r.h.Get(api.HeaderPreferenceApplied))
	r = e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000051"), "Prefer", "respond-async, wait=100")
	require.Equal(t, http.StatusAccepted, r.code)
	require.Equal(t, "respond-async", r.h.Get(api.HeaderPreferenceApplied))
	r = e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000052"), "Prefer", "wait=100000")
	require.Equal(t, http.StatusAccepted, r.code, "capped at MaxWait (2s), within the 10s deadline")
	require.Equal(t, "wait=2", r.h.Get(api.HeaderPreferenceApplied))
	require.Equal(t, "queued", r.json(t)["state"])
}

func TestTaxTypeSpellingsForwardedAsSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	for i, spelling := range []string{"NO_VAT", "NOT_VAT"} {
		body := strings.Replace(testkit.Receipt(fmt.Sprintf("%06d", 60+i)), `"taxType":"VAT_ABLE"`, `"taxType":"`+spelling+`"`, 1)
		r := e.do(http.MethodPost, "/rest/receipt", body)
		require.Less(t, r.code, 500, "%s", r.body)
		require.NotEmpty(t, r.h.Get(api.HeaderQueueID), "accepted and sent, whatever the upstream says")
		issued := e.sim.Receipts()
		require.Len(t, issued, i+1)
		require.Equal(t, body, string(issued[i].Body), "byte for byte")
	}
}

// A UTF-8 byte order mark, which some Windows POS programs write before
// the JSON, is dropped: the receipt is accepted and forwarded without it.
func TestByteOrderMarkIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	body := testkit.Receipt("000070")
	r := e.do(http.MethodPost, "/rest/receipt", "\xEF\xBB\xBF"+body)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	issued := e.sim.Receipts()
	require.Len(t, issued, 1)
	require.Equal(t, body, string(issued[0].Body), "forwarded without the mark, otherwise byte for byte")

	r = e.do(http.MethodPost, "/rest/receipt", body)
	require.Equal(t, "true", r.h.Get(api.HeaderReplayed), "the same receipt without the mark is the same request")
}

// While a backlog drains, a new receipt that has sync.concurrency or more
// entries due before it cannot get its answer within the wait: it is
// answered 202 at once instead of holding the till for accept.wait.
func TestNewReceiptBehindABacklogIsAnswered202AtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true, worker: syncer.Config{Concurrency: 2}, api: api.Options{Wait: 30 * time.Second}})
	for _, suffix := range []string{"000080", "000081"} {
		r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt(suffix), "Prefer", "wait=0")
		require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	}
	r := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000082"), "Prefer", "wait=20") // 10s deadline
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	require.Empty(t, r.h.Get(api.HeaderPreferenceApplied), "the wait it asked for was not applied")
	m := r.json(t)
	require.Equal(t, "queued", m["state"])
	require.Contains(t, m["message"], "older receipts are still being sent")

	// One entry ahead with two send slots: it waits as usual (here 1s, as
	// asked, since no worker runs) and says so.
	e2 := newEnv(t, envOpts{noWorker: true, worker: syncer.Config{Concurrency: 2}, api: api.Options{Wait: 30 * time.Second}})
	r = e2.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000083"), "Prefer", "wait=0")
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	r = e2.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000084"), "Prefer", "wait=1")
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	require.Contains(t, r.json(t)["message"], "no answer from the tax service yet")
}

// A POS that retries just after midnight without an Idempotency-Key
// derives a new day's key; the same body accepted minutes before midnight
// is still recognised, so the sale is not issued twice. Past the grace, or
// with another body, it is a new sale.
func TestRetryAcrossMidnightIsAReplay(t *testing.T) {
	t.Parallel()
	ub := time.FixedZone("UB", 8*3600)
	var mu sync.Mutex
	clock := time.Date(2026, 11, 22, 23, 40, 0, 0, ub)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	set := func(t time.Time) { mu.Lock(); clock = t; mu.Unlock() }
	e := newEnv(t, envOpts{api: api.Options{Now: now, Location: ub, Wait: 5 * time.Second}})
	early := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000499"))
	require.Equal(t, http.StatusOK, early.code, "%s", early.body)

	set(time.Date(2026, 11, 22, 23, 59, 58, 0, ub))
	first := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000500"))
	require.Equal(t, http.StatusOK, first.code, "%s", first.body)
	qid := first.h.Get(api.HeaderQueueID)

	for _, at := range []time.Time{time.Date(2026, 11, 23, 0, 0, 3, 0, ub), time.Date(2026, 11, 23, 0, 14, 0, 0, ub)} {
		set(at) // every retry in the first 15 minutes of the day
		again := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000500"))
		require.Equal(t, "true", again.h.Get(api.HeaderReplayed), "%v: %s", at, again.body)
		require.Equal(t, qid, again.h.Get(api.HeaderQueueID))
	}

	other := strings.Replace(testkit.Receipt("000500"), `"totalVat":1`, `"totalVat":2`, 1)
	r := e.do(http.MethodPost, "/rest/receipt", other)
	require.Less(t, r.code, 300, "a new day may reuse a billIdSuffix: %s", r.body)
	require.NotEqual(t, qid, r.h.Get(api.HeaderQueueID))

	// 000499 was accepted at 23:40, before the last 15 minutes of the day,
	// so the same body today is a new sale.
	set(time.Date(2026, 11, 23, 0, 10, 0, 0, ub))
	late := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000499"))
	require.Less(t, late.code, 300, "%s", late.body)
	require.Empty(t, late.h.Get(api.HeaderReplayed))
	require.NotEqual(t, early.h.Get(api.HeaderQueueID), late.h.Get(api.HeaderQueueID))
	require.Len(t, e.sim.Receipts(), 4)
}

// A receipt the tax service rejected never became a sale, so the POS may
// send the corrected receipt under the same bill number: it replaces the
// rejected one instead of getting 409 for the rest of the day.
func TestCorrectedReceiptReplacesARejectedOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	bad := strings.Replace(testkit.Receipt("000600"), `"totalAmount":12345.6789012345678901,"merchantTin"`, `"totalAmount":1,"merchantTin"`, 1)
	first := e.do(http.MethodPost, "/rest/receipt", bad)
	require.Equal(t, http.StatusBadRequest, first.code, "%s", first.body)
	qid := first.h.Get(api.HeaderQueueID)
	e.waitState(qid, queue.StateRejected)

	fixed := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000600"))
	require.Equal(t, http.StatusOK, fixed.code, "%s", fixed.body)
	require.Empty(t, fixed.h.Get(api.HeaderReplayed))
	require.NotEqual(t, qid, fixed.h.Get(api.HeaderQueueID))
	old := e.entry(qid)
	require.Equal(t, "cancelled", old["state"])
	require.Contains(t, old["outcome"].(map[string]any)["message"], "superseded by "+fixed.h.Get(api.HeaderQueueID))

	// The key now belongs to the corrected receipt: it replays, and another
	// body conflicts.
	require.Equal(t, "true", e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("000600")).h.Get(api.HeaderReplayed))
	require.Equal(t, http.StatusConflict, e.do(http.MethodPost, "/rest/receipt", bad).code)
	require.Len(t, e.sim.Receipts(), 1)
}
