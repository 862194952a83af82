package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// mutated decodes the valid receipt, lets change edit it and encodes it
// again; numbers stay json.Number so they are written back exactly.
func mutated(t testing.TB, change func(m map[string]any)) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(testkit.Receipt("000900")))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	change(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

func subOf(m map[string]any) map[string]any { return m["receipts"].([]any)[0].(map[string]any) }
func itemOf(m map[string]any) map[string]any {
	return subOf(m)["items"].([]any)[0].(map[string]any)
}
func payOf(m map[string]any) map[string]any { return m["payments"].([]any)[0].(map[string]any) }

func without(get func(map[string]any) map[string]any, key string) func(map[string]any) {
	return func(m map[string]any) { delete(get(m), key) }
}

func with(get func(map[string]any) map[string]any, key string, v any) func(map[string]any) {
	return func(m map[string]any) { get(m)[key] = v }
}

func top(m map[string]any) map[string]any { return m }

type badCase struct {
	name   string
	method string
	body   string
	hdr    []string
	code   int
	want   string // the message names the problem
}

func malformedCases(t testing.TB) []badCase {
	valid := testkit.Receipt("000900")
	deep := `{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`
	cases := []badCase{
		{name: "not JSON", body: "hello", want: "body"},
		{name: "empty body", body: "", want: "body"},
		{name: "array instead of object", body: `[1,2]`, want: "body"},
		{name: "truncated JSON", body: valid[:len(valid)/2], want: "body"},
		{name: "trailing data", body: valid + `{}`, want: "body"},
		{name: "invalid UTF-8", body: strings.Replace(valid, `"name":"a"`, "\"name\":\"\xff\xfe\"", 1), want: "UTF-8"},
		{name: "number 1e400", body: mutated(t, with(top, "totalAmount", json.Number("1e400"))), want: "totalAmount"},
		{name: "amount as a string", body: mutated(t, with(top, "totalAmount", "12.5")), want: "totalAmount"},
		{name: "posNo as a number", body: mutated(t, with(top, "posNo", json.Number("7"))), want: "posNo"},
		{name: "receipts as an object", body: mutated(t, with(top, "receipts", map[string]any{})), want: "receipts"},
		{name: "items as a string", body: mutated(t, with(subOf, "items", "x")), want: "receipts[0].items"},
		{name: "qty as a boolean", body: mutated(t, with(itemOf, "qty", true)), want: "receipts[0].items[0].qty"},
		{name: "empty receipts", body: mutated(t, with(top, "receipts", []any{})), want: "receipts"},
		{name: "empty merchantTin", body: mutated(t, with(top, "merchantTin", "")), want: "merchantTin"},
		{name: "required field null", body: mutated(t, with(top, "posNo", nil)), want: "posNo"},
		{name: "bad type enum", body: mutated(t, with(top, "type", "B2X_RECEIPT")), want: "type"},
		{name: "bad taxType enum", body: mutated(t, with(subOf, "taxType", "VAT")), want: "receipts[0].taxType"},
		{name: "bad barCodeType enum", body: mutated(t, with(itemOf, "barCodeType", "EAN")), want: "barCodeType"},
		{name: "bad payment code", body: mutated(t, with(payOf, "code", "CHEQUE")), want: "payments[0].code"},
		{name: "bad payment status", body: mutated(t, with(payOf, "status", "DONE")), want: "payments[0].status"},
		{name: "10,000-deep nesting", body: strings.Replace(valid, `"totalVat":1`, `"data":`+deep, 1), want: "deep"},
		{name: "duplicate key", body: strings.Replace(valid, `"posNo":"P1"`, `"posNo":"P1","posNo":"P2"`, 1), want: "posNo"},
		{name: "oversized body", body: `{"x":"` + strings.Repeat("a", 2<<20) + `"}`, code: http.StatusRequestEntityTooLarge, want: "limit"},
		{name: "text/plain", body: valid, hdr: []string{"Content-Type", "text/plain"}, code: http.StatusUnsupportedMediaType, want: "application/json"},
		{name: "no content type", body: valid, hdr: []string{"Content-Type", ""}, code: http.StatusUnsupportedMediaType, want: "application/json"},
		{name: "form content type", body: valid, hdr: []string{"Content-Type", "application/x-www-form-urlencoded"}, code: http.StatusUnsupportedMediaType, want: "application/json"},
		{name: "bad Idempotency-Key", body: valid, hdr: []string{"Idempotency-Key", strings.Repeat("k", 300)}, want: "Idempotency-Key"},
		{name: "delete: not JSON", method: http.MethodDelete, body: "id=1", want: "body"},
		{name: "delete: missing id", method: http.MethodDelete, body: `{"date":"2026-01-02 10:00:00"}`, want: "id"},
		{name: "delete: id as a number", method: http.MethodDelete, body: `{"id":42}`, want: "id"},
		{name: "delete: bad date", method: http.MethodDelete, body: `{"id":"Q000000000001","date":"yesterday"}`, want: "date"},
	}
	// A 40,000-character key field once gave 500 (bbolt: key too large)
	// or was stored; every identifier is bounded and named.
	long := strings.Repeat("7", 40000)
	for _, f := range []string{"merchantTin", "posNo", "billIdSuffix", "branchNo", "districtCode", "customerTin", "consumerNo"} {
		cases = append(cases, badCase{name: "40,000-character " + f, body: mutated(t, with(top, f, long)), want: f + ": must be at most 128 characters"})
	}
	cases = append(cases,
		badCase{name: "40,000-character receipts[0].merchantTin", body: mutated(t, with(subOf, "merchantTin", long)), want: "receipts[0].merchantTin"},
		badCase{name: "129-character posNo", body: mutated(t, with(top, "posNo", long[:129])), want: "posNo"},
		badCase{name: "delete: 40,000-character id", method: http.MethodDelete, body: `{"id":"` + long + `"}`, want: "id: must be at most 128"})
	for _, req := range []string{"branchNo", "totalAmount", "merchantTin", "posNo", "type", "billIdSuffix", "receipts"} {
		cases = append(cases, badCase{name: "missing " + req, body: mutated(t, without(top, req)), want: req})
	}
	for _, req := range []string{"totalAmount", "taxType", "merchantTin", "items"} {
		cases = append(cases, badCase{name: "missing receipts[0]." + req, body: mutated(t, without(subOf, req)), want: "receipts[0]." + req})
	}
	for _, req := range []string{"name", "measureUnit", "qty", "unitPrice", "totalAmount"} {
		cases = append(cases, badCase{name: "missing item " + req, body: mutated(t, without(itemOf, req)), want: "receipts[0].items[0]." + req})
	}
	for _, req := range []string{"code", "status", "paidAmount"} {
		cases = append(cases, badCase{name: "missing payment " + req, body: mutated(t, without(payOf, req)), want: "payments[0]." + req})
	}
	return cases
}

// TestMalformedRequests sends each bad request and checks that it is a
// 4xx whose message names the problem, and that nothing was stored.
func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noWorker: true})
	cases := malformedCases(t)
	require.GreaterOrEqual(t, len(cases), 25)
	before := e.counts()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			r := e.do(method, "/rest/receipt", c.body, c.hdr...)
			code := c.code
			if code == 0 {
				code = http.StatusBadRequest
			}
			require.Equal(t, code, r.code, "%s", r.body)
			require.Empty(t, r.h.Get("X-Queue-Id"))
			m := r.json(t)
			require.Equal(t, "ERROR", m["status"])
			require.Contains(t, m["message"], c.want)
			if code == http.StatusBadRequest {
				errs, ok := m["errors"].([]any)
				require.True(t, ok, "field-level errors listed: %s", r.body)
				require.NotEmpty(t, errs)
				first := errs[0].(map[string]any)
				require.Equal(t, m["message"], first["field"].(string)+": "+first["problem"].(string))
			}
		})
	}
	require.Equal(t, before, e.counts(), "nothing stored")
	entries, _, err := e.q.List(queue.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, entries)
	require.False(t, bytes.Contains([]byte(e.logText()), []byte("accepted")))
}
