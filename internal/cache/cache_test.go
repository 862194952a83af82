package cache

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// lookups the sim answers, with the refresh interval of their kind.
var simLookups = []struct {
	path  string
	route string
}{
	{"/api/info/check/getBranchInfo", sim.RouteBranchInfo},
	{"/api/receipt/receipt/getProductTaxCode", sim.RouteProductTaxCode},
	{"/api/info/check/getInfo?tin=5317878", sim.RouteMerchantInfo},
	{"/api/info/check/getInfo?tin=999", sim.RouteMerchantInfo}, // unknown: data null
	{"/api/info/check/getTinInfo?regNo=2712345", sim.RouteTinInfo},
	{"/api/info/check/getTinInfo?regNo=0000", sim.RouteTinInfo}, // unknown: status 500, data null
	{"/rest/info", sim.RouteInfo},
	{"/rest/bankAccounts?tin=5317878", sim.RouteBankAccounts},
	{"/api/info/check/barcode/v2", sim.RouteClassification},
	{"/api/info/check/barcode/v2/1", sim.RouteClassification},
	{"/api/info/check/barcode/v2/1/11", sim.RouteClassification},
}

func TestOnlineFillsThenOfflineServesStale(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})

	// Online: every lookup is a MISS with the upstream's exact bytes, then a HIT.
	want := map[string]answer{}
	for _, l := range simLookups {
		direct := httpGet(t, s.URL()+l.path)
		require.Equal(t, http.StatusOK, direct.status, l.path)
		a := e.get(t, l.path)
		require.Equal(t, Miss, a.cache(), l.path)
		require.Equal(t, direct.body, a.body, l.path)
		require.Equal(t, direct.header.Get("Content-Type"), a.header.Get("Content-Type"), l.path)
		want[l.path] = a
	}
	before := map[string]int{}
	for _, l := range simLookups {
		before[l.route] = s.Requests(l.route)
	}
	e.clk.Add(30 * time.Second)
	for _, l := range simLookups {
		if l.route == sim.RouteInfo || l.route == sim.RouteBankAccounts {
			continue // PosAPI's live state: asked every time (TestLiveKindsAskUpstreamFirst)
		}
		a := e.get(t, l.path)
		require.Equal(t, Hit, a.cache(), l.path)
		require.Equal(t, "30", a.header.Get(HeaderAge), l.path)
		require.Equal(t, want[l.path].body, a.body, l.path)
		require.Equal(t, before[l.route], s.Requests(l.route), "a hit asks nothing upstream: %s", l.path)
	}
	for _, k := range e.c.Freshness() {
		if k.Kind == client.OpInfo || k.Kind == client.OpBankAccounts || k.Kind == client.OpStockQr {
			continue // stock QR needs the POS's token: TestStockQrCachedWithForwardedToken
		}
		require.Equal(t, 30*time.Second, k.OldestAge, k.Kind)
		require.NotZero(t, k.LastRefresh, k.Kind)
		require.Empty(t, k.LastError, k.Kind)
	}

	// Offline, 2 hours later: hourly and negative kinds are STALE, daily and
	// weekly ones still HIT, PosAPI's live kinds STALE; every body as before.
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	e.clk.Add(2 * time.Hour)
	stale := map[string]bool{
		"/api/info/check/getInfo?tin=5317878":      true, // merchant_info: 1h
		"/api/info/check/getInfo?tin=999":          true, // negative: 10m
		"/api/info/check/getTinInfo?regNo=0000":    true, // negative: 10m
		"/rest/info":                               true, // live
		"/rest/bankAccounts?tin=5317878":           true, // live
		"/api/info/check/getTinInfo?regNo=2712345": false,
	}
	for _, l := range simLookups {
		a := e.get(t, l.path)
		wantState := Hit
		if stale[l.path] {
			wantState = Stale
		}
		require.Equal(t, http.StatusOK, a.status, l.path)
		require.Equal(t, wantState, a.cache(), l.path)
		require.Equal(t, want[l.path].body, a.body, l.path)
		require.Equal(t, strconv.Itoa(int((2*time.Hour+30*time.Second)/time.Second)), a.header.Get(HeaderAge), l.path)
	}

	// Offline a year later: still served, all STALE (no max_stale).
	e.clk.Add(365 * 24 * time.Hour)
	for _, l := range simLookups {
		a := e.get(t, l.path)
		require.Equal(t, Stale, a.cache(), l.path)
		require.Equal(t, want[l.path].body, a.body, l.path)
	}

	// An uncached key offline: 503 with the envelope.
	a := e.get(t, "/api/info/check/getInfo?tin=2012345")
	requireEnvelope(t, a, http.StatusServiceUnavailable)
}

func requireEnvelope(t *testing.T, a answer, status int) {
	t.Helper()
	require.Equal(t, status, a.status, a.body)
	require.Equal(t, "application/json", a.header.Get("Content-Type"))
	var env map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(a.body), &env), a.body)
	require.Len(t, env, 3, a.body)
	require.Equal(t, strconv.Itoa(status), string(env["status"]))
	require.Equal(t, "null", string(env["data"]))
	var msg string
	require.NoError(t, json.Unmarshal(env["msg"], &msg))
	require.NotEmpty(t, msg)
}

func TestConcurrentMissesMakeOneRequest(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	// The latency keeps the first fetch in flight while the others arrive.
	require.NoError(t, s.SetFaults(sim.Faults{Latency: 300 * time.Millisecond}))
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	const n = 50
	answers := make([]answer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var err error
			answers[i], err = tryGet(e.srv.URL + "/api/info/check/getInfo?tin=5317878")
			assert.NoError(t, err)
		}()
	}
	close(start)
	wg.Wait()
	require.Equal(t, 1, s.Requests(sim.RouteMerchantInfo))
	misses := 0
	for _, a := range answers {
		require.Equal(t, http.StatusOK, a.status)
		require.Equal(t, answers[0].body, a.body)
		if a.cache() == Miss {
			misses++
		}
	}
	// More than one MISS: the requests overlapped and shared one fetch.
	require.Greater(t, misses, 1)
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"msg":"","status":200,"data":{"name":"` + r.URL.Query().Get("tin") + `"}}`))
	})
	st := openStore(t)
	e := newEnv(t, st, newClient(t, up.srv.URL), Config{MaxEntries: 3})
	get := func(tin string) answer { return e.get(t, "/api/info/check/getInfo?tin="+tin) }
	for _, tin := range []string{"a", "b", "c"} {
		require.Equal(t, Miss, get(tin).cache())
	}
	require.Equal(t, Hit, get("a").cache())  // order now, most recent first: a c b
	require.Equal(t, Miss, get("d").cache()) // evicts b
	require.Equal(t, 4, up.count("/api/info/check/getInfo"))
	require.Equal(t, Hit, get("c").cache())
	require.Equal(t, Hit, get("a").cache())
	require.Equal(t, Hit, get("d").cache())
	require.Equal(t, 3, e.c.Freshness()[2].Entries)

	// b is gone from disk too: a new cache over the same file sees a, c, d
	// only, and serves them with the upstream gone.
	up.srv.Close()
	e2 := newEnv(t, st, newClient(t, up.srv.URL), Config{MaxEntries: 3})
	for _, tin := range []string{"a", "c", "d"} {
		require.Equal(t, `{"msg":"","status":200,"data":{"name":"`+tin+`"}}`, e2.get(t, "/api/info/check/getInfo?tin="+tin).body)
	}
	requireEnvelope(t, e2.get(t, "/api/info/check/getInfo?tin=b"), http.StatusServiceUnavailable)
}

func TestRestartTrimsToMaxEntriesKeepingNewest(t *testing.T) {
	t.Parallel()
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[["` + r.URL.Path[len(classPrefix):] + `","x"]]`))
	})
	st := openStore(t)
	e := newEnv(t, st, newClient(t, up.srv.URL), Config{})
	for _, seg := range []string{"1", "2", "3", "4"} {
		e.clk.Add(time.Minute)
		require.Equal(t, Miss, e.get(t, classPrefix+"/"+seg).cache())
	}
	up.srv.Close()
	e2 := newEnv(t, st, newClient(t, up.srv.URL), Config{MaxEntries: 2})
	require.Equal(t, 2, e2.c.Freshness()[6].Entries)
	require.Equal(t, `[["/4","x"]]`, e2.get(t, classPrefix+"/4").body)
	require.Equal(t, `[["/3","x"]]`, e2.get(t, classPrefix+"/3").body)
	requireEnvelope(t, e2.get(t, classPrefix+"/1"), http.StatusServiceUnavailable)
}

func TestUpstreamAnswers(t *testing.T) {
	t.Parallel()
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("tin") {
		case "404":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"msg":"no such thing","status":404,"data":null}`))
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"msg":"boom","status":500,"data":null}`))
		case "portal":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<html>log in to the wifi</html>`))
		default:
			_, _ = w.Write([]byte(`{"msg":"","status":200,"data":[]}`))
		}
	})
	e := newEnv(t, openStore(t), newClient(t, up.srv.URL), Config{})
	const path = "/api/info/check/getInfo"

	a := e.get(t, "/rest/bankAccounts?tin=404")
	require.Equal(t, http.StatusNotFound, a.status, "4xx passed through")
	require.Equal(t, `{"msg":"no such thing","status":404,"data":null}`, a.body)
	require.Equal(t, http.StatusNotFound, e.get(t, "/rest/bankAccounts?tin=404").status)
	require.Equal(t, 2, up.count("/rest/bankAccounts"), "4xx not cached")

	require.Equal(t, http.StatusNotFound, e.get(t, path+"?tin=404").status, "4xx passed through")
	requireEnvelope(t, e.get(t, path+"?tin=500"), http.StatusServiceUnavailable)
	require.Equal(t, 2, up.count(path), "a 4xx is an answer: the lookup API is not known down after it")
	// Each failure makes the lookup API known down; past that, a miss asks.
	e.clk.Add(knownDownFor)
	requireEnvelope(t, e.get(t, path+"?tin=portal"), http.StatusServiceUnavailable)
	e.clk.Add(knownDownFor)
	requireEnvelope(t, e.get(t, path+"?tin=portal"), http.StatusServiceUnavailable)
	require.Equal(t, 4, up.count(path), "5xx and non-JSON answers are not cached")
	fr := e.c.Freshness()[2]
	require.Equal(t, client.OpMerchantInfo, fr.Kind)
	require.Equal(t, 0, fr.Entries)
	require.Contains(t, fr.LastError, "not JSON")
}

func TestNegativeAnswersExpireSooner(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{NegativeTTL: 5 * time.Minute})
	for _, p := range []string{"/api/info/check/getInfo?tin=999", "/api/info/check/getInfo?tin=5317878",
		"/api/info/check/getTinInfo?regNo=0000"} {
		require.Equal(t, Miss, e.get(t, p).cache())
	}
	e.clk.Add(4 * time.Minute)
	require.Equal(t, Hit, e.get(t, "/api/info/check/getInfo?tin=999").cache())
	e.clk.Add(2 * time.Minute)
	require.Equal(t, Stale, e.get(t, "/api/info/check/getInfo?tin=999").cache())
	require.Equal(t, Stale, e.get(t, "/api/info/check/getTinInfo?regNo=0000").cache())
	require.Equal(t, Hit, e.get(t, "/api/info/check/getInfo?tin=5317878").cache())
}

func TestMaxStaleBoundsStaleServing(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{MaxStale: time.Hour})
	const path = "/api/info/check/getInfo?tin=5317878"
	require.Equal(t, Miss, e.get(t, path).cache())
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	e.clk.Add(time.Hour + 59*time.Minute) // 59m past the 1h interval
	require.Equal(t, Stale, e.get(t, path).cache())
	e.clk.Add(2 * time.Minute) // 61m past
	requireEnvelope(t, e.get(t, path), http.StatusServiceUnavailable)
	require.NoError(t, s.SetFaults(sim.Faults{}))
	require.Equal(t, Miss, e.get(t, path).cache())
}

func TestSendDataPassesThrough(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	for i := range 2 {
		a := e.get(t, "/rest/sendData")
		require.Equal(t, http.StatusOK, a.status)
		require.Empty(t, a.cache())
		require.Equal(t, i+1, s.Requests(sim.RouteSendData), "never cached")
	}
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	requireEnvelope(t, e.get(t, "/rest/sendData"), http.StatusServiceUnavailable)
	resp, err := http.Head(e.srv.URL + "/rest/sendData")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, 2, s.Requests(sim.RouteSendData))
}

func TestRoutesAndMethods(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	requireEnvelope(t, e.get(t, "/rest/nothing"), http.StatusNotFound)
	requireEnvelope(t, e.get(t, "/api/info/check/barcode/v2x"), http.StatusNotFound)
	requireEnvelope(t, e.get(t, "/api/info/check/getInfo"), http.StatusBadRequest)
	requireEnvelope(t, e.get(t, "/api/info/check/getInfo?tin=%20"), http.StatusBadRequest)
	requireEnvelope(t, e.get(t, "/api/info/check/getTinInfo?regNo=1&regNo=2"), http.StatusBadRequest)
	resp, err := http.Post(e.srv.URL+"/rest/info", "application/json", nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, 0, s.Requests(sim.RouteMerchantInfo)+s.Requests(sim.RouteTinInfo)+s.Requests(sim.RouteInfo))
}

func TestClassificationSegmentRules(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	bad := map[string]string{
		"seven segments":    "/1/11/111/1111/11111/1111111/7",
		"empty segment":     "/1//111",
		"trailing slash":    "/1/",
		"bare slash":        "/",
		"whitespace only":   "/1/%20%09",
		"dot-dot":           "/..",
		"eight empty slots": "///////",
	}
	for name, p := range bad {
		t.Run(name, func(t *testing.T) {
			requireEnvelope(t, e.get(t, classPrefix+p), http.StatusBadRequest)
		})
	}
	require.Equal(t, 0, s.Requests(sim.RouteClassification), "nothing sent for a bad path")

	// Segments are trimmed: " 1 " and "1" are one entry.
	require.Equal(t, Miss, e.get(t, classPrefix+"/%201%20").cache())
	a := e.get(t, classPrefix+"/1")
	require.Equal(t, Hit, a.cache())
	require.Equal(t, httpGet(t, s.URL()+classPrefix+"/1").body, a.body)
	six := e.get(t, classPrefix+"/1/11/111/1111/11111/1111111")
	require.Equal(t, http.StatusOK, six.status, six.body)
}

func TestRunWarmsUpAndRefreshesInBackground(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	stop := runCache(t, e.c)
	stored := func(lks ...lookup) bool {
		for _, lk := range lks {
			if rec, err := e.c.read(lk); err != nil || rec == nil {
				return false
			}
		}
		return true
	}
	require.Eventually(t, func() bool {
		return stored(lookup{op: client.OpBranchInfo}, lookup{op: client.OpProductTaxCode}, lookup{op: client.OpClassification})
	}, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return len(e.c.Warmth().Missing) == 0 }, 5*time.Second, 5*time.Millisecond)
	e.c.NoteTIN(" 9999999 ") // not in /rest/info: warmed once noted (an unknown TIN: a negative answer)
	e.c.NoteTIN("9999999")
	require.Eventually(t, func() bool {
		return stored(lookup{op: client.OpMerchantInfo, param: "9999999"})
	}, 5*time.Second, 5*time.Millisecond)
	w := e.c.Warmth()
	require.Empty(t, w.Missing)
	tins := 0
	for _, k := range e.c.Freshness() {
		if k.Kind == client.OpMerchantInfo {
			tins = k.Entries
		}
	}
	require.Greater(t, tins, 2, "the TINs of /rest/info and the noted one")
	for r, n := range map[string]int{sim.RouteBranchInfo: 1, sim.RouteProductTaxCode: 1, sim.RouteInfo: 1,
		sim.RouteClassification: 4, sim.RouteMerchantInfo: tins} {
		require.Equal(t, n, s.Requests(r), "each lookup of the warm set fetched once: %s", r)
	}
	require.Equal(t, Hit, e.get(t, "/api/info/check/getInfo?tin=5317878").cache())
	require.Equal(t, Hit, e.get(t, "/api/info/check/getBranchInfo").cache())

	// Stale: served at once while one slow background refresh runs, then
	// fresh again.
	require.NoError(t, s.SetFaults(sim.Faults{Latency: 500 * time.Millisecond}))
	e.clk.Add(2 * time.Hour)
	before := s.Requests(sim.RouteMerchantInfo)
	for range 5 {
		require.Equal(t, Stale, e.get(t, "/api/info/check/getInfo?tin=5317878").cache())
	}
	require.Eventually(t, func() bool {
		return e.get(t, "/api/info/check/getInfo?tin=5317878").cache() == Hit
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, before+1, s.Requests(sim.RouteMerchantInfo), "one refresh for five stale hits")
	fr := e.c.Freshness()[2]
	require.Equal(t, tins, fr.Entries)
	require.Equal(t, e.clk.Now(), fr.LastRefresh)
	stop()
}

func TestStaleRefreshFailureIsNotRetriedPerHit(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	e := newEnv(t, openStore(t), newClient(t, s.URL()), Config{})
	const path = "/api/info/check/getInfo?tin=5317878"
	require.Equal(t, Miss, e.get(t, path).cache())
	require.NoError(t, s.SetFaults(sim.Faults{ErrorRate: 1}))
	runCache(t, e.c)
	e.clk.Add(2 * time.Hour)
	require.Equal(t, Stale, e.get(t, path).cache())
	require.Eventually(t, func() bool { return s.Requests(sim.RouteMerchantInfo) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return e.c.Freshness()[2].LastError != "" }, 5*time.Second, 5*time.Millisecond)
	for range 5 {
		require.Equal(t, Stale, e.get(t, path).cache())
	}
	e.clk.Add(refreshRetry)
	require.Equal(t, Stale, e.get(t, path).cache())
	require.Eventually(t, func() bool { return s.Requests(sim.RouteMerchantInfo) == 3 }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, Stale, e.get(t, path).cache())
	require.Equal(t, 3, s.Requests(sim.RouteMerchantInfo))
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	for name, cfg := range map[string]Config{
		"negative ttl":     {NegativeTTL: -1},
		"negative entries": {MaxEntries: -1},
		"negative refresh": {Refresh: map[client.Op]time.Duration{client.OpInfo: -time.Second}},
		"uncached op":      {Refresh: map[client.Op]time.Duration{client.OpSendData: time.Second}},
	} {
		_, err := New(context.Background(), st, nil, cfg, nil, nil)
		require.ErrorIs(t, err, ErrConfig, name)
	}
}

// TestIndexAndStoreAgreeUnderChurn: concurrent misses, hits and evictions
// of a small cache leave the bucket holding exactly the indexed entries.
func TestIndexAndStoreAgreeUnderChurn(t *testing.T) {
	t.Parallel()
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"msg":"","status":200,"data":{"tin":"` + r.URL.Query().Get("tin") + `"}}`))
	})
	st := openStore(t)
	e := newEnv(t, st, newClient(t, up.srv.URL), Config{MaxEntries: 5})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				tin := strconv.Itoa((g*7 + i*3) % 12)
				a, err := tryGet(e.srv.URL + "/api/info/check/getInfo?tin=" + tin)
				assert.NoError(t, err)
				assert.Equal(t, http.StatusOK, a.status)
				assert.Equal(t, `{"msg":"","status":200,"data":{"tin":"`+tin+`"}}`, a.body)
			}
		}()
	}
	wg.Wait()
	var stored []string
	require.NoError(t, st.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(store.BucketCache).Bucket([]byte(client.OpMerchantInfo)).ForEach(func(k, _ []byte) error {
			stored = append(stored, string(k[1:]))
			return nil
		})
	}))
	e.c.mu.Lock()
	var indexed []string
	for el := e.c.lru.Front(); el != nil; el = el.Next() {
		indexed = append(indexed, el.Value.(*entry).lk.param)
	}
	e.c.mu.Unlock()
	require.Len(t, indexed, 5)
	require.ElementsMatch(t, indexed, stored)
	require.Equal(t, 5, e.c.Freshness()[2].Entries)
}

func TestNewDropsUndecodableRecords(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	st := openStore(t)
	e := newEnv(t, st, newClient(t, s.URL()), Config{})
	require.Equal(t, Miss, e.get(t, "/rest/info").cache())
	require.NoError(t, st.Update(context.Background(), func(tx *bbolt.Tx) error {
		b := tx.Bucket(store.BucketCache)
		if err := b.Bucket([]byte(client.OpBranchInfo)).Put([]byte("=x"), record{status: 200}.encode()); err != nil {
			return err // a parameter on a parameterless kind
		}
		return b.Bucket([]byte(client.OpMerchantInfo)).Put([]byte("=5317878"), []byte{9, 9, 9})
	}))
	e2 := newEnv(t, st, newClient(t, s.URL()), Config{})
	fr := e2.c.Freshness()
	require.Equal(t, 0, fr[0].Entries)
	require.Equal(t, 0, fr[2].Entries)
	require.Equal(t, 1, fr[4].Entries)
	require.NoError(t, st.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(store.BucketCache)
		require.Nil(t, b.Bucket([]byte(client.OpBranchInfo)).Get([]byte("=x")))
		require.Nil(t, b.Bucket([]byte(client.OpMerchantInfo)).Get([]byte("=5317878")))
		return nil
	}))
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	require.Equal(t, Stale, e2.get(t, "/rest/info").cache())
}

// TestGlobalListsAreNeverEvicted: however many other lookups fill the
// cache, the district and product tax code lists stay, in memory and on
// disk, and are served offline.
func TestGlobalListsAreNeverEvicted(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 1})
	st := openStore(t)
	e := newEnv(t, st, newClient(t, s.URL()), Config{MaxEntries: 2})
	lists := []string{"/api/info/check/getBranchInfo", "/api/receipt/receipt/getProductTaxCode"}
	want := map[string]string{}
	for _, p := range lists {
		a := e.get(t, p)
		require.Equal(t, Miss, a.cache())
		want[p] = a.body
	}
	for _, p := range []string{"/1", "/2", "/3", "/1/11", "/1/12"} {
		e.clk.Add(time.Minute)
		require.Equal(t, Miss, e.get(t, classPrefix+p).cache())
	}
	e.clk.Add(time.Minute)
	require.Equal(t, Miss, e.get(t, "/api/info/check/getInfo?tin=5317878").cache()) // evicts /1/11
	require.Equal(t, 1, kindOf(t, e.c, client.OpBranchInfo).Entries)
	require.Equal(t, 1, kindOf(t, e.c, client.OpProductTaxCode).Entries)
	require.Equal(t, 1, kindOf(t, e.c, client.OpClassification).Entries)
	require.Equal(t, 1, kindOf(t, e.c, client.OpMerchantInfo).Entries)

	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	for _, p := range lists {
		a := e.get(t, p)
		require.Equal(t, Hit, a.cache(), p)
		require.Equal(t, want[p], a.body, p)
	}
	requireEnvelope(t, e.get(t, classPrefix+"/1"), http.StatusServiceUnavailable)

	// A restart with a smaller bound trims the others, never the lists.
	e2 := newEnv(t, st, newClient(t, s.URL()), Config{MaxEntries: 1})
	for _, p := range lists {
		a := e2.get(t, p)
		require.Equal(t, Hit, a.cache(), p)
		require.Equal(t, want[p], a.body, p)
	}
	require.Equal(t, Hit, e2.get(t, "/api/info/check/getInfo?tin=5317878").cache(), "the newest other entry")
	requireEnvelope(t, e2.get(t, classPrefix+"/1/12"), http.StatusServiceUnavailable)
}
