package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/sim"
)

// Issue 32, point 4, and issue 40, item 3: /receiptd/status's alert is
// the level of the page's most urgent card in every state, one function
// deciding both: none before the outage; a warning while the tax service
// has been out of reach for less than OutageCritical (a blip pages
// nobody); critical past it; none again once it answers.
func TestStatusAlertFollowsThePage(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64 // how far the API's clock runs ahead of the worker's
	clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	e := newEnv(t, envOpts{api: api.Options{Wait: 50 * time.Millisecond, Now: clock, OutageCritical: 10 * time.Minute}})
	both := func() (string, string) {
		alert, _ := e.do(http.MethodGet, "/receiptd/status", "").json(t)["alert"].(string)
		return alert, pageLevel(t, string(e.do(http.MethodGet, "/", "").body))
	}
	alert, page := both()
	require.Equal(t, []string{"none", "none"}, []string{alert, page})

	qid, _ := e.queuedWhileDown("032001")
	require.Eventually(t, func() bool {
		alert, page = both()
		return alert != "none"
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"warn", "warn"}, []string{alert, page}, "an outage younger than OutageCritical is a warning")
	require.Contains(t, string(e.do(http.MethodGet, "/", "").body), `id="attention-upstream"`)

	ahead.Store(int64(10 * time.Minute))
	alert, page = both()
	require.Equal(t, []string{"critical", "critical"}, []string{alert, page}, "past OutageCritical it is critical")

	ahead.Store(0)
	require.NoError(t, e.sim.SetFaults(sim.Faults{}))
	e.waitState(qid, "sent")
	require.Eventually(t, func() bool {
		alert, page = both()
		return alert == "none" && page == "none"
	}, 10*time.Second, 20*time.Millisecond)
}

// pageLevel is the level of the most urgent item of the page's Needs
// attention ("none" when it has none).
func pageLevel(t *testing.T, html string) string {
	t.Helper()
	first := regexp.MustCompile(`<article class="item (critical|warn)"`).FindStringSubmatch(html)
	if first == nil {
		require.Contains(t, html, `<p class="allgood" id="attention">`)
		return "none"
	}
	return first[1]
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
