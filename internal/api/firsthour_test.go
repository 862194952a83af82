package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/sim"
)

// Issue 32, point 4: a card on the page raises alert in /receiptd/status
// (here the tax service out of reach, with nothing old yet), and it drops
// back to none once the page shows nothing.
func TestStatusAlertFollowsThePage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: api.Options{Wait: 50 * time.Millisecond}})
	qid, _ := e.queuedWhileDown("032001")
	require.Eventually(t, func() bool {
		return e.do(http.MethodGet, "/receiptd/status", "").json(t)["alert"] == "critical"
	}, 10*time.Second, 20*time.Millisecond, "the tax service out of reach is a critical card, so alert is critical")
	page := string(e.do(http.MethodGet, "/", "").body)
	require.Contains(t, page, `id="attention-upstream"`)

	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	e.waitState(qid, "sent")
	require.Eventually(t, func() bool {
		return e.do(http.MethodGet, "/receiptd/status", "").json(t)["alert"] == "none"
	}, 10*time.Second, 20*time.Millisecond)
}

// Issue 32, point 8: "Last failures" lists an outage's failed attempts
// while it lasts (the entry queued) and after (the entry sent).
func TestLastFailuresRecordTheOutage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: api.Options{Wait: 50 * time.Millisecond}})
	qid, _ := e.queuedWhileDown("032002")
	failuresRow := func() string {
		page := string(e.do(http.MethodGet, "/", "").body)
		start := strings.Index(page, `<h2 id="h-failures">`)
		end := strings.Index(page, `<h2 id="h-counts">`)
		require.True(t, start > 0 && end > start)
		return page[start:end]
	}
	// The worker probes with the entry now and then: it is listed while
	// queued and while sending alike, so the page never drops it.
	require.Eventually(t, func() bool { return strings.Contains(failuresRow(), qid) }, 10*time.Second, 20*time.Millisecond,
		"the queued entry's failed attempt is listed during the outage")
	for range 20 {
		during := failuresRow()
		require.Contains(t, during, qid, "the failure stays listed through the outage")
		require.Regexp(t, `<td>(queued|sending)</td>`, during)
		require.NotContains(t, during, "No failures recorded")
		time.Sleep(10 * time.Millisecond)
	}

	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	e.waitState(qid, "sent")
	after := failuresRow()
	require.Contains(t, after, qid, "after the outage, the failure is still on record")
	require.Contains(t, after, "<td>sent</td>")
	require.Contains(t, after, "Nothing: it reached the tax service once it answered again.")
}
