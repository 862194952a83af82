package cache

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

// errEnvelope is how the lookup API reports its own failure: HTTP 200.
const errEnvelope = `{"msg":"Internal error","status":500,"data":null}`

// goodAnswers: one well-formed answer per cached kind, and the route.
var goodAnswers = []struct {
	op         client.Op
	path, body string
}{
	{client.OpBranchInfo, "/api/info/check/getBranchInfo",
		`{"msg":"","status":200,"data":[{"branchCode":"01","branchName":"A","subBranchCode":"02","subBranchName":"B"}]}`},
	{client.OpProductTaxCode, "/api/receipt/receipt/getProductTaxCode",
		`{"msg":"","status":200,"data":[{"taxProductCode":"6011100","taxTypeCode":305,"startDate":"2023-01-01 00:00:00","endDate":null}]}`},
	{client.OpMerchantInfo, "/api/info/check/getInfo?tin=5317878", `{"msg":"","status":200,"data":{"name":"Shop","found":true}}`},
	{client.OpTinInfo, "/api/info/check/getTinInfo?regNo=2712345", `{"msg":"","status":200,"data":5317878}`},
	{client.OpClassification, classPrefix + "/1", `[["11","Дэд салбар 11"]]`},
	{client.OpInfo, "/rest/info", `{"posId":1,"unsentCount":0,"leftLotteries":100}`},
	{client.OpBankAccounts, "/rest/bankAccounts?tin=5317878", `[{"id":1000,"bankAccountNo":"5012345678"}]`},
}

// kindOf returns op's line of Freshness.
func kindOf(t *testing.T, c *Cache, op client.Op) KindStatus {
	t.Helper()
	for _, k := range c.Freshness() {
		if k.Kind == op {
			return k
		}
	}
	t.Fatalf("no freshness line for %s", op)
	return KindStatus{}
}

// TestFailureInside200KeepsGoodData: for every kind, an upstream that
// answers well, then with the lookup API's error envelope (HTTP 200), then
// not at all: the good answer stays, served STALE, also after a restart.
func TestFailureInside200KeepsGoodData(t *testing.T) {
	t.Parallel()
	for _, g := range goodAnswers {
		t.Run(string(g.op), func(t *testing.T) {
			var failing atomic.Bool
			up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if failing.Load() {
					_, _ = w.Write([]byte(errEnvelope))
					return
				}
				for _, a := range goodAnswers { // warm-up asks for other kinds too
					if strings.HasPrefix(a.path, r.URL.Path) {
						_, _ = w.Write([]byte(a.body))
						return
					}
				}
				_, _ = w.Write([]byte(`[]`))
			})
			st := openStore(t)
			e := newEnv(t, st, newClient(t, up.srv.URL), Config{})
			a := e.get(t, g.path)
			require.Equal(t, Miss, a.cache())
			require.Equal(t, g.body, a.body)

			failing.Store(true)
			e.clk.Add(400 * 24 * time.Hour) // past every refresh interval
			urlPath, _, _ := strings.Cut(g.path, "?")
			asked := up.count(urlPath)
			runCache(t, e.c)
			a = e.get(t, g.path)
			require.Equal(t, Stale, a.cache())
			require.Equal(t, g.body, a.body)
			require.Eventually(t, func() bool {
				return up.count(urlPath) > asked && kindOf(t, e.c, g.op).LastError != ""
			}, 5*time.Second, 5*time.Millisecond, "the refresh got the error envelope")
			require.Contains(t, kindOf(t, e.c, g.op).LastError, "reports a failure")
			for range 3 {
				a = e.get(t, g.path)
				require.Equal(t, http.StatusOK, a.status)
				require.Equal(t, Stale, a.cache(), "the error envelope was not stored as a fresh answer")
				require.Equal(t, g.body, a.body)
				require.Equal(t, "34560000", a.header.Get(HeaderAge), "still the first fetch")
			}

			up.srv.Close()
			a = e.get(t, g.path)
			require.Equal(t, Stale, a.cache())
			require.Equal(t, g.body, a.body)
			e2 := newEnv(t, st, newClient(t, up.srv.URL), Config{})
			e2.clk.Add(400 * 24 * time.Hour)
			a = e2.get(t, g.path)
			require.Equal(t, Stale, a.cache())
			require.Equal(t, g.body, a.body, "the good answer is what is on disk")
		})
	}
}

// TestFailureInside200OnAMiss: a failure in a 200 body is a 503 and is not
// stored; a true "not found" is a negative answer.
func TestFailureInside200OnAMiss(t *testing.T) {
	t.Parallel()
	var body atomic.Value
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body.Load().(string)))
	})
	e := newEnv(t, openStore(t), newClient(t, up.srv.URL), Config{})
	failures := []struct{ name, path, body string }{
		{"branch info, error envelope", "/api/info/check/getBranchInfo", errEnvelope},
		{"branch info, data null", "/api/info/check/getBranchInfo", `{"msg":"","status":200,"data":null}`},
		{"branch info, no data", "/api/info/check/getBranchInfo", `{"msg":"","status":200}`},
		{"branch info, data not a list", "/api/info/check/getBranchInfo", `{"msg":"","status":200,"data":"x"}`},
		{"branch info, status as text", "/api/info/check/getBranchInfo", `{"msg":"x","status":"500","data":[]}`},
		{"branch info, bare list", "/api/info/check/getBranchInfo", `[]`},
		{"product tax codes, error envelope", "/api/receipt/receipt/getProductTaxCode", errEnvelope},
		{"product tax codes, data null", "/api/receipt/receipt/getProductTaxCode", `{"msg":"","status":200,"data":null}`},
		{"merchant info, error envelope", "/api/info/check/getInfo?tin=1", errEnvelope},
		{"merchant info, status 400 with data", "/api/info/check/getInfo?tin=1", `{"msg":"bad","status":400,"data":{}}`},
		{"tin info, other status", "/api/info/check/getTinInfo?regNo=1", `{"msg":"x","status":503,"data":null}`},
		{"tin info, status 500 with data", "/api/info/check/getTinInfo?regNo=1", `{"msg":"x","status":500,"data":1}`},
		{"classification, error envelope", classPrefix, errEnvelope},
		{"classification, null", classPrefix + "/1", `null`},
		{"info, error envelope", "/rest/info", errEnvelope},
		{"info, PosAPI error", "/rest/info", `{"status":"ERROR","message":"no connection to the tax authority"}`},
		{"bank accounts, error envelope", "/rest/bankAccounts?tin=1", errEnvelope},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			e.clk.Add(knownDownFor) // the last failure's window is over: this miss asks
			body.Store(f.body)
			requireEnvelope(t, e.get(t, f.path), http.StatusServiceUnavailable)
			rec, err := e.c.read(mustRoute(t, f.path))
			require.NoError(t, err)
			require.Nil(t, rec, "nothing stored")
		})
	}

	negatives := []struct{ name, path, body string }{
		{"unknown TIN", "/api/info/check/getInfo?tin=999", `{"msg":"","status":200,"data":null}`},
		{"unknown regNo", "/api/info/check/getTinInfo?regNo=0000", `{"msg":"олдсонгүй","status":500,"data":null}`},
	}
	for _, n := range negatives {
		t.Run(n.name, func(t *testing.T) {
			e.clk.Add(knownDownFor)
			body.Store(n.body)
			a := e.get(t, n.path)
			require.Equal(t, Miss, a.cache())
			require.Equal(t, n.body, a.body)
			require.Equal(t, Hit, e.get(t, n.path).cache())
			rec, err := e.c.read(mustRoute(t, n.path))
			require.NoError(t, err)
			require.True(t, rec.negative)
		})
	}
}

// TestNotFoundKeepsAKnownTIN: getTinInfo's "not found" is the lookup API's
// failure body, so it never replaces a TIN known before; getInfo's
// (status 200, data null) does replace merchant info.
func TestNotFoundKeepsAKnownTIN(t *testing.T) {
	t.Parallel()
	var body atomic.Value
	up := newFakeUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body.Load().(string)))
	})
	e := newEnv(t, openStore(t), newClient(t, up.srv.URL), Config{})
	const tin, merchant = "/api/info/check/getTinInfo?regNo=2712345", "/api/info/check/getInfo?tin=5317878"
	body.Store(`{"msg":"","status":200,"data":5317878}`)
	require.Equal(t, Miss, e.get(t, tin).cache())
	body.Store(`{"msg":"","status":200,"data":{"name":"Shop"}}`)
	require.Equal(t, Miss, e.get(t, merchant).cache())

	e.clk.Add(400 * 24 * time.Hour)
	body.Store(`{"msg":"","status":500,"data":null}`)
	res := e.c.fetch(context.Background(), context.Background(), mustRoute(t, tin))
	require.ErrorIs(t, res.err, ErrFailedAnswer)
	a := e.get(t, tin)
	require.Equal(t, Stale, a.cache())
	require.Equal(t, `{"msg":"","status":200,"data":5317878}`, a.body)

	body.Store(`{"msg":"","status":200,"data":null}`)
	res = e.c.fetch(context.Background(), context.Background(), mustRoute(t, merchant))
	require.NoError(t, res.err)
	a = e.get(t, merchant)
	require.Equal(t, Hit, a.cache())
	require.Equal(t, `{"msg":"","status":200,"data":null}`, a.body)
}

func mustRoute(t *testing.T, pathAndQuery string) lookup {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://x"+pathAndQuery, nil)
	require.NoError(t, err)
	lk, err := parseRoute(req.URL.EscapedPath(), req.URL.Query())
	require.NoError(t, err)
	return lk
}

func TestJudge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		op       client.Op
		body     string
		negative bool
		err      error
	}{
		{name: "list", op: client.OpBranchInfo, body: `{"msg":"","status":200,"data":[]}`},
		{name: "list, status absent", op: client.OpProductTaxCode, body: `{"data":[{}]}`},
		{name: "list, status as text", op: client.OpProductTaxCode, body: `{"status":"200","data":[]}`},
		{name: "list, error envelope", op: client.OpBranchInfo, body: errEnvelope, err: ErrFailedAnswer},
		{name: "list, data null", op: client.OpBranchInfo, body: `{"status":200,"data":null}`, err: ErrFailedAnswer},
		{name: "list, data object", op: client.OpProductTaxCode, body: `{"status":200,"data":{}}`, err: ErrFailedAnswer},
		{name: "list, status 201", op: client.OpProductTaxCode, body: `{"status":201,"data":[]}`, err: ErrFailedAnswer},
		{name: "list, status not a number", op: client.OpBranchInfo, body: `{"status":"OK","data":[]}`, err: ErrFailedAnswer},
		{name: "list, not JSON", op: client.OpBranchInfo, body: `<html>`, err: ErrBadAnswer},
		{name: "merchant", op: client.OpMerchantInfo, body: `{"status":200,"data":{"name":"x"}}`},
		{name: "merchant unknown", op: client.OpMerchantInfo, body: `{"msg":"","status":200,"data":null}`, negative: true},
		{name: "merchant, no data", op: client.OpMerchantInfo, body: `{"status":200}`, negative: true},
		{name: "merchant, error envelope", op: client.OpMerchantInfo, body: errEnvelope, err: ErrFailedAnswer},
		{name: "tin", op: client.OpTinInfo, body: `{"status":200,"data":"5317878"}`},
		{name: "tin unknown", op: client.OpTinInfo, body: `{"status":500,"data":null}`, negative: true},
		{name: "tin, status 500 with data", op: client.OpTinInfo, body: `{"status":500,"data":1}`, err: ErrFailedAnswer},
		{name: "tin, status 502", op: client.OpTinInfo, body: `{"status":502,"data":null}`, err: ErrFailedAnswer},
		{name: "classification", op: client.OpClassification, body: ` [["1","x"]]`},
		{name: "classification, empty", op: client.OpClassification, body: `[]`},
		{name: "classification, envelope", op: client.OpClassification, body: errEnvelope, err: ErrFailedAnswer},
		{name: "classification, null", op: client.OpClassification, body: `null`, err: ErrFailedAnswer},
		{name: "info", op: client.OpInfo, body: `{"posId":1}`},
		{name: "info, status 200", op: client.OpInfo, body: `{"status":200,"posId":1}`},
		{name: "info, status text", op: client.OpInfo, body: `{"status":"SUCCESS"}`},
		{name: "info, error envelope", op: client.OpInfo, body: errEnvelope, err: ErrFailedAnswer},
		{name: "info, PosAPI error", op: client.OpInfo, body: `{"status":"ERROR","message":"x"}`, err: ErrFailedAnswer},
		{name: "bank accounts", op: client.OpBankAccounts, body: `[]`},
		{name: "bank accounts, status as text", op: client.OpBankAccounts, body: `{"status":"500"}`, err: ErrFailedAnswer},
		{name: "bank accounts, not JSON", op: client.OpBankAccounts, body: ``, err: ErrBadAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			negative, err := judge(tt.op, []byte(tt.body))
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				require.Contains(t, err.Error(), string(tt.op))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.negative, negative)
		})
	}
}
