package cache

import (
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

// posAPI is a scripted PosAPI (and lookup API) on 127.0.0.1:0: it counts
// answers, so each live answer differs, and it can hang.
type posAPI struct {
	*fakeUpstream
	n    atomic.Int64
	hang atomic.Bool
}

func newPosAPI(t *testing.T) *posAPI {
	t.Helper()
	p := &posAPI{}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) }) // runs before the server's Close
	p.fakeUpstream = newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if p.hang.Load() {
			select { // until the client gives up
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		n := strconv.FormatInt(p.n.Add(1), 10)
		switch r.URL.Path {
		case "/rest/info":
			_, _ = w.Write([]byte(`{"posId":1,"unsentCount":` + n + `}`))
		case "/rest/bankAccounts":
			_, _ = w.Write([]byte(`[{"id":` + n + `,"tin":"` + r.URL.Query().Get("tin") + `"}]`))
		case classPrefix:
			_, _ = w.Write([]byte(`[]`))
		default:
			_, _ = w.Write([]byte(`{"msg":"","status":200,"data":[]}`))
		}
	})
	return p
}

// shortClient gives up on a hanging upstream after 500ms.
func shortClient(t *testing.T, base string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{BaseURL: base, LookupBaseURL: base, Timeout: 500 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestLiveKindsAskUpstreamFirst: PosAPI's info and bank accounts are asked
// for on every request while PosAPI answers (MISS, Age 0), and the last
// answer is what is served when it stops answering.
func TestLiveKindsAskUpstreamFirst(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/rest/info", "/rest/bankAccounts?tin=5317878"} {
		t.Run(path, func(t *testing.T) {
			up := newPosAPI(t)
			e := newEnv(t, openStore(t), newClient(t, up.srv.URL), Config{})
			var last string
			for i := range 3 {
				a := e.get(t, path)
				require.Equal(t, http.StatusOK, a.status)
				require.Equal(t, Miss, a.cache())
				require.Equal(t, "0", a.header.Get(HeaderAge))
				require.NotEqual(t, last, a.body, "a new answer each time")
				last = a.body
				require.EqualValues(t, i+1, up.n.Load())
				e.clk.Add(10 * time.Minute)
			}
			up.srv.Close()
			a := e.get(t, path)
			require.Equal(t, Stale, a.cache())
			require.Equal(t, last, a.body, "the newest answer was stored")
			require.Equal(t, "600", a.header.Get(HeaderAge))
		})
	}
}

// TestLiveKindsCoalesce: concurrent requests while PosAPI is slow share one
// upstream request.
func TestLiveKindsCoalesce(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = w.Write([]byte(`{"unsentCount":7}`))
	})
	e := newEnv(t, openStore(t), newClient(t, up.srv.URL), Config{})
	const n = 20
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			answers[i], err = tryGet(e.srv.URL + "/rest/info")
			assert.NoError(t, err)
		}()
	}
	joined := func() int {
		e.c.flights.mu.Lock()
		defer e.c.flights.mu.Unlock()
		if f, ok := e.c.flights.calls[lookup{op: client.OpInfo}.key()]; ok {
			return f.waiters
		}
		return -1
	}
	require.Eventually(t, func() bool { return joined() == n-1 }, 5*time.Second, time.Millisecond,
		"every request but the first joins the first one's fetch")
	close(release)
	wg.Wait()
	require.Equal(t, 1, up.count("/rest/info"))
	for _, a := range answers {
		require.Equal(t, Miss, a.cache())
		require.Equal(t, `{"unsentCount":7}`, a.body)
	}
}

// TestLiveKindsWhilePosAPIHangs: after one request waited out the upstream
// timeout, requests get the stored copy (or the 503) at once without asking,
// for knownDownFor; then a request asks again. With Run, a background probe
// asks instead, and its success brings requests back to PosAPI.
func TestLiveKindsWhilePosAPIHangs(t *testing.T) {
	t.Parallel()
	up := newPosAPI(t)
	e := newEnv(t, openStore(t), shortClient(t, up.srv.URL), Config{})
	info := e.get(t, "/rest/info")
	require.Equal(t, Miss, info.cache())
	bank := e.get(t, "/rest/bankAccounts?tin=5317878")
	require.Equal(t, Miss, bank.cache())

	up.hang.Store(true)
	e.clk.Add(time.Minute)
	a := e.get(t, "/rest/info") // waits for the client's timeout
	require.Equal(t, Stale, a.cache())
	require.Equal(t, info.body, a.body)
	require.Equal(t, "60", a.header.Get(HeaderAge))
	require.Equal(t, 2, up.count("/rest/info"))

	e.clk.Add(knownDownFor - time.Second)
	for range 3 {
		a = e.get(t, "/rest/info")
		require.Equal(t, Stale, a.cache())
		require.Equal(t, info.body, a.body)
	}
	a = e.get(t, "/rest/bankAccounts?tin=5317878")
	require.Equal(t, Stale, a.cache(), "PosAPI is down for every live kind")
	require.Equal(t, bank.body, a.body)
	a = e.get(t, "/rest/bankAccounts?tin=2012345")
	requireEnvelope(t, a, http.StatusServiceUnavailable)
	require.Contains(t, a.body, "not asked again yet")
	require.Equal(t, 2, up.count("/rest/info"), "not asked while known down")
	require.Equal(t, 1, up.count("/rest/bankAccounts"), "not asked while known down")

	e.clk.Add(time.Second) // known down no longer: a request asks
	require.Equal(t, Stale, e.get(t, "/rest/info").cache())
	require.Equal(t, 3, up.count("/rest/info"))

	// With Run: the STALE answers above queued a probe, which Run's worker
	// sends; it fails, so requests still get the stored copy at once.
	runCache(t, e.c)
	require.Eventually(t, func() bool { return up.count("/rest/info") == 4 && !refreshing(e.c, "/rest/info") },
		5*time.Second, time.Millisecond)
	require.Equal(t, Stale, e.get(t, "/rest/info").cache())
	require.Equal(t, 4, up.count("/rest/info"))

	// PosAPI is back. Once the entry's refreshRetry has passed, a request
	// gets the stored copy at once and starts a probe, whose success brings
	// requests back to PosAPI.
	up.hang.Store(false)
	e.clk.Add(refreshRetry)
	require.Equal(t, Stale, e.get(t, "/rest/info").cache())
	require.Eventually(t, func() bool { return up.count("/rest/info") == 5 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return e.get(t, "/rest/info").cache() == Miss }, 5*time.Second, time.Millisecond,
		"the probe's success ends the known-down time")
	a = e.get(t, "/rest/info")
	require.Equal(t, Miss, a.cache())
	require.NotEqual(t, info.body, a.body)
}

// refreshing reports whether a background refresh of path (with its
// query, if any) is queued or running.
func refreshing(c *Cache, path string) bool {
	u, err := url.Parse(path)
	if err != nil {
		panic(err)
	}
	lk, err := parseRoute(u.EscapedPath(), u.Query())
	if err != nil {
		panic(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.index[lk.key()]
	return ok && el.Value.(*entry).refreshing
}

// TestLookupMissesWhileLookupAPIHangs: after one miss waited out the
// lookup API's timeout, misses of every lookup API kind are a 503 at once
// for knownDownFor, while stale entries are still served and refreshed and
// PosAPI is asked as ever; a refresh's success ends the window. PosAPI's
// window does not close the lookup API to misses either.
func TestLookupMissesWhileLookupAPIHangs(t *testing.T) {
	t.Parallel()
	pos, look := newPosAPI(t), newPosAPI(t)
	cl, err := client.New(client.Config{BaseURL: pos.srv.URL, LookupBaseURL: look.srv.URL, Timeout: 500 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(cl.CloseIdleConnections)
	e := newEnv(t, openStore(t), cl, Config{Refresh: map[client.Op]time.Duration{client.OpMerchantInfo: 10 * time.Second}})
	const getInfo, getTinInfo = "/api/info/check/getInfo", "/api/info/check/getTinInfo"

	// PosAPI hangs: its window does not stop lookup misses from asking.
	pos.hang.Store(true)
	requireEnvelope(t, e.get(t, "/rest/info"), http.StatusServiceUnavailable)
	require.Equal(t, 1, pos.count("/rest/info"))
	for _, path := range []string{getInfo + "?tin=1", "/api/info/check/getBranchInfo",
		"/api/receipt/receipt/getProductTaxCode", classPrefix} {
		require.Equal(t, Miss, e.get(t, path).cache(), path)
	}
	pos.hang.Store(false)
	e.clk.Add(knownDownFor)

	// The lookup API hangs: the first miss waits out the timeout.
	look.hang.Store(true)
	requireEnvelope(t, e.get(t, getInfo+"?tin=2"), http.StatusServiceUnavailable)
	require.Equal(t, 2, look.count(getInfo))

	// Then misses of other keys and kinds answer at once, without asking.
	a := e.get(t, getTinInfo+"?regNo=AA00112233")
	requireEnvelope(t, a, http.StatusServiceUnavailable)
	require.Contains(t, a.body, "not asked again yet")
	requireEnvelope(t, e.get(t, classPrefix+"/1"), http.StatusServiceUnavailable)
	requireEnvelope(t, e.get(t, getInfo+"?tin=3"), http.StatusServiceUnavailable)
	require.Equal(t, 0, look.count(getTinInfo), "not asked while known down")
	require.Equal(t, 1, look.count(classPrefix), "not asked while known down")
	require.Equal(t, 2, look.count(getInfo), "not asked while known down")

	// PosAPI is unaffected.
	require.Equal(t, Miss, e.get(t, "/rest/info").cache())
	require.Equal(t, 2, pos.count("/rest/info"))

	// A stale entry is still served, and queues a refresh.
	e.clk.Add(20 * time.Second)
	require.Equal(t, Stale, e.get(t, getInfo+"?tin=1").cache())
	requireEnvelope(t, e.get(t, getTinInfo+"?regNo=AA00112233"), http.StatusServiceUnavailable)
	require.Equal(t, 0, look.count(getTinInfo))

	// Run's worker sends the refresh despite the window; it fails, so misses
	// still answer at once.
	runCache(t, e.c)
	require.Eventually(t, func() bool { return look.count(getInfo) == 3 && !refreshing(e.c, getInfo+"?tin=1") },
		5*time.Second, time.Millisecond)
	requireEnvelope(t, e.get(t, getTinInfo+"?regNo=AA00112233"), http.StatusServiceUnavailable)
	require.Equal(t, 0, look.count(getTinInfo))

	// The lookup API is back: the next refresh (after refreshRetry, well
	// inside the window) succeeds and ends the window at once.
	look.hang.Store(false)
	e.clk.Add(refreshRetry)
	require.Equal(t, Stale, e.get(t, getInfo+"?tin=1").cache())
	require.Eventually(t, func() bool { return look.count(getInfo) == 4 && !refreshing(e.c, getInfo+"?tin=1") },
		5*time.Second, time.Millisecond)
	a = e.get(t, getTinInfo+"?regNo=AA00112233")
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, Miss, a.cache())
	require.Equal(t, 1, look.count(getTinInfo))
}
