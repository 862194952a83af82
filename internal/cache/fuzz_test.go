package cache

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/receiptd/receiptd/internal/client"
)

// FuzzParseRoute: any path and query either maps to a lookup that obeys the
// segment and parameter rules and whose key survives a restart (the stored
// key rebuilds the same lookup), or is refused with a documented error.
func FuzzParseRoute(f *testing.F) {
	for _, seed := range [][2]string{
		{"/rest/info", ""},
		{"/rest/bankAccounts", "tin=5317878"},
		{"/api/info/check/getInfo", "tin=+1+"},
		{"/api/info/check/getTinInfo", "regNo=%D0%A3%D0%91900&x=1"},
		{"/api/info/check/getBranchInfo", ""},
		{"/api/receipt/receipt/getProductTaxCode", ""},
		{"/rest/sendData", ""},
		{classPrefix, ""},
		{classPrefix + "/", ""},
		{classPrefix + "/1/11/111/1111/11111/1111111", ""},
		{classPrefix + "/1/11/111/1111/11111/1111111/x", ""},
		{classPrefix + "/%20/1", ""},
		{classPrefix + "/a%2Fb/..", ""},
		{classPrefix + "/%zz", ""},
		{classPrefix + "x", ""},
		{"/api/info/check/getInfo", "tin=1&tin=2"},
		{"/api/inventory/stock/getStockQr", "stockQr=BF6B1FBA86FB4C41ADDBB01C09C024F5"},
		{"/api/inventory/stock/getStockQr", ""},
		{"/api/tpi/receipt/saveOprMerchants", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, path, rawQuery string) {
		q, _ := url.ParseQuery(rawQuery)
		lk, err := parseRoute(path, q)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) && !errors.Is(err, errNoRoute) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if lk.op == client.OpSendData || lk.op == client.OpSaveMerchants {
			return // pass-throughs
		}
		if !cachedOp(lk.op) {
			t.Fatalf("op %q is not cached", lk.op)
		}
		if lk.op != client.OpClassification && (lk.param == "" || len(lk.param) > maxParam ||
			strings.TrimSpace(lk.param) != lk.param || strings.ContainsFunc(lk.param, isControl)) {
			if _, ok := paramOf[lk.op]; ok {
				t.Fatalf("bad parameter %q passed", lk.param)
			}
		}
		if lk.op == client.OpClassification {
			if len(lk.segs) > client.MaxSegments {
				t.Fatalf("%d segments", len(lk.segs))
			}
			for _, s := range lk.segs {
				if s == "" || strings.TrimSpace(s) != s || s == "." || s == ".." {
					t.Fatalf("bad segment %q passed", s)
				}
			}
		}
		back, err := lookupFromKey(lk.op, lk.param)
		if err != nil {
			t.Fatalf("stored key %q of %s does not load: %v", lk.param, lk.op, err)
		}
		if back.key() != lk.key() || strings.Join(back.segs, "\x00") != strings.Join(lk.segs, "\x00") {
			t.Fatalf("key round trip: %q %q became %q %q", lk.param, lk.segs, back.param, back.segs)
		}
		if back.query().Encode() != lk.query().Encode() {
			t.Fatalf("query changed: %q vs %q", back.query().Encode(), lk.query().Encode())
		}
	})
}

// FuzzDecodeRecord: a damaged record never panics, and a decodable one
// re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(record{status: 200, contentType: "application/json", body: []byte(`{"data":null}`)}.encode())
	f.Add(record{status: 299, negative: true}.encode())
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := decodeRecord(v, true)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if got := r.encode(); string(got) != string(v) {
			t.Fatalf("re-encoded %x, was %x", got, v)
		}
	})
}

// FuzzJudge: any body of any kind is judged without panicking, with a
// documented error, and what is accepted is JSON that the kind's rules
// allow: lists and classification carry data, only merchant and TIN info
// are ever negative, and no accepted lookup envelope has a failing status.
func FuzzJudge(f *testing.F) {
	for _, seed := range []string{
		`{"msg":"Internal error","status":500,"data":null}`, `{"msg":"","status":200,"data":[]}`,
		`{"status":"200","data":{}}`, `{"status":"ERROR","message":"x"}`, `[["1","x"]]`, `null`, `<html>`, `{"status":1e3}`,
	} {
		for i := range cachedOps {
			f.Add(i, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, i int, body []byte) {
		op := cachedOps[uint(i)%uint(len(cachedOps))]
		negative, err := judge(op, body)
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) && !errors.Is(err, ErrFailedAnswer) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("%s: accepted a body that is not JSON", op)
		}
		if negative && op != client.OpMerchantInfo && op != client.OpTinInfo {
			t.Fatalf("%s: negative answer", op)
		}
		switch op {
		case client.OpBranchInfo, client.OpProductTaxCode, client.OpMerchantInfo, client.OpTinInfo:
			env, err := client.DecodeEnvelope(body)
			if err != nil {
				t.Fatalf("%s: accepted a body that is no envelope: %v", op, err)
			}
			if env.Status != 0 && env.Status != 200 && (op != client.OpTinInfo || env.Status != 500 || !negative) {
				t.Fatalf("%s: accepted status %d", op, env.Status)
			}
			if negative != (env.Data == nil) {
				t.Fatalf("%s: negative %v with data %q", op, negative, env.Data)
			}
			var list []json.RawMessage
			if (op == client.OpBranchInfo || op == client.OpProductTaxCode) && (json.Unmarshal(env.Data, &list) != nil || list == nil) {
				t.Fatalf("%s: accepted data %q, not a list", op, env.Data)
			}
		case client.OpClassification:
			var rows []json.RawMessage
			if json.Unmarshal(body, &rows) != nil || rows == nil {
				t.Fatalf("%s: accepted %q, not a list", op, body)
			}
		}
	})
}
