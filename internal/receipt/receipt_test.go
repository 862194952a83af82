package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // Asia/Ulaanbaatar on machines without a zone database (Windows)

	"github.com/stretchr/testify/require"
)

// validBody is a complete B2C receipt using every documented field.
const validBody = `{
  "branchNo": "001",
  "totalAmount": 12500.50,
  "totalVAT": 1136.41,
  "totalCityTax": 0,
  "districtCode": "0102",
  "merchantTin": "37900846788",
  "posNo": "POS-1",
  "customerTin": "",
  "consumerNo": "99887766",
  "type": "B2C_RECEIPT",
  "inactiveId": "",
  "invoiceId": "",
  "reportMonth": "",
  "billIdSuffix": "000123",
  "data": {"note": "free", "n": 1e400},
  "receipts": [{
    "totalAmount": 12500.50,
    "taxType": "VAT_ABLE",
    "merchantTin": "37900846788",
    "customerTin": "",
    "bankAccountNo": "5012345678",
    "iBan": "MN123",
    "invoiceId": "",
    "totalVAT": 1136.41,
    "totalCityTax": 0,
    "data": {},
    "items": [{
      "name": "Талх",
      "barCode": "4900000000001",
      "barCodeType": "GS1",
      "classificationCode": "2349010",
      "taxProductCode": "",
      "measureUnit": "ш",
      "qty": 2,
      "unitPrice": 6250.25,
      "totalVAT": 1136.41,
      "totalCityTax": 0,
      "totalAmount": 12500.50,
      "data": {"lotNo": "L1", "stockQR": ["qr1", "qr2"]}
    }]
  }],
  "payments": [
    {"code": "CASH", "status": "PAID", "paidAmount": 500.50},
    {"code": "PAYMENT_CARD", "status": "PAID", "paidAmount": 12000, "exchangeCode": "x",
     "data": {"terminalID": "T1", "rrn": "123", "maskedCardNumber": "4111****1111", "easy": false, "bankCode": "05"}}
  ]
}`

// mutate decodes validBody, lets change edit it, and encodes it again.
// Numbers stay json.Number, so they are written back exactly.
func mutate(t *testing.T, change func(m map[string]any)) []byte {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(validBody))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	change(m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

func sub(m map[string]any) map[string]any {
	return m["receipts"].([]any)[0].(map[string]any)
}

func itm(m map[string]any) map[string]any {
	return sub(m)["items"].([]any)[0].(map[string]any)
}

func card(m map[string]any) map[string]any {
	return m["payments"].([]any)[1].(map[string]any)["data"].(map[string]any)
}

func del(get func(map[string]any) map[string]any, key string) func(map[string]any) {
	return func(m map[string]any) { delete(get(m), key) }
}

func set(get func(map[string]any) map[string]any, key string, v any) func(map[string]any) {
	return func(m map[string]any) { get(m)[key] = v }
}

func top(m map[string]any) map[string]any { return m }

func compact(tb testing.TB, body string) []byte {
	var b bytes.Buffer
	require.NoError(tb, json.Compact(&b, []byte(body)))
	return b.Bytes()
}

// manyKeys is an object with n keys k0, k1, ... and then dup once more.
func manyKeys(n int, dup string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(`"` + dup + `":0}`)
	return b.String()
}

func deep(n int, open, close string) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

func TestParseCreateRefuses(t *testing.T) {
	t.Parallel()
	type tc struct {
		name    string
		body    []byte
		field   string
		problem string // the first problem must contain this
	}
	cases := []tc{
		{"not JSON", []byte("hello"), "body", "must be a JSON object"},
		{"form encoded", []byte("merchantTin=1&posNo=2"), "body", "must be a JSON object"},
		{"bare word value", []byte(`{"a":hello}`), "body", "invalid JSON at byte 5: expected a value, found 'h'"},
		{"trailing comma", []byte(`{"a":1,}`), "body", "invalid JSON at byte 7: expected a quoted key"},
		{"leading zero", []byte(`{"a":01}`), "body", "invalid JSON at byte 6: expected ',' or '}'"},
		{"bad escape", []byte(`{"a":"\x"}`), "body", "invalid JSON at byte 7: expected one of"},
		{"control character", []byte("{\"a\":\"\t\"}"), "body", "no control character"},
		{"unterminated string", []byte(`{"a":"x`), "body", "unexpected end of input"},
		{"missing value", []byte(`{"a":}`), "body", "invalid JSON at byte 5: expected a value"},
		{"array trailing comma", []byte(`{"a":[1,]}`), "body", "invalid JSON at byte 8: expected a value"},
		{"empty body", nil, "body", "empty body"},
		{"whitespace only", []byte(" \n"), "body", "empty body"},
		{"array at top", []byte(`[]`), "body", "must be a JSON object"},
		{"string at top", []byte(`"x"`), "body", "must be a JSON object"},
		{"truncated", []byte(validBody[:200]), "body", "unexpected end of input"},
		{"missing colon", []byte(`{"a" 1}`), "body", "invalid JSON"},
		{"invalid UTF-8", bytes.Replace([]byte(validBody), []byte("Талх"), []byte("\xff\xfe"), 1), "body", "invalid UTF-8 at byte"},
		{"trailing garbage", []byte(validBody + " x"), "body", "unexpected data after the JSON value"},
		{"trailing second object", []byte(validBody + "{}"), "body", "unexpected data after the JSON value"},
		{"10000-deep arrays", []byte(`{"data":{"x":` + deep(10000, "[", "]") + `}}`), "data.x" + strings.Repeat("[0]", 30), "nesting deeper than 32"},
		{"10000-deep objects", []byte(`{"data":` + deep(10000, `{"a":`, "}") + `}`), "data" + strings.Repeat(".a", 31), "nesting deeper than 32"},
		{"1e400", mutate(t, set(top, "totalAmount", json.Number("1e400"))), "totalAmount", "out of range"},
		{"1e-400", mutate(t, set(itm, "qty", json.Number("1e-400"))), "receipts[0].items[0].qty", "out of range"},
		{"huge exponent", mutate(t, set(top, "totalVAT", json.Number("1e999999999999"))), "totalVAT", "out of range"},
		{"1e15", mutate(t, set(sub, "totalAmount", json.Number("1e15"))), "receipts[0].totalAmount", "out of range"},
		{"string number", mutate(t, set(top, "totalAmount", "12.5")), "totalAmount", "must be a number"},
		{"string qty", mutate(t, set(itm, "qty", "2")), "receipts[0].items[0].qty", "must be a number"},
		{"bool price", mutate(t, set(itm, "unitPrice", true)), "receipts[0].items[0].unitPrice", "must be a number"},
		{"number merchantTin", mutate(t, set(top, "merchantTin", json.Number("37900846788"))), "merchantTin", "must be a string"},
		{"empty posNo", mutate(t, set(top, "posNo", "")), "posNo", "must not be empty"},
		{"null posNo", mutate(t, set(top, "posNo", nil)), "posNo", "required"},
		{"empty sub merchantTin", mutate(t, set(sub, "merchantTin", "")), "receipts[0].merchantTin", "must not be empty"},
		{"receipts not array", mutate(t, set(top, "receipts", map[string]any{})), "receipts", "must be an array"},
		{"receipts empty", mutate(t, set(top, "receipts", []any{})), "receipts", "must not be empty"},
		{"receipt null element", mutate(t, set(top, "receipts", []any{nil})), "receipts[0]", "must be an object"},
		{"items not array", mutate(t, set(sub, "items", "x")), "receipts[0].items", "must be an array"},
		{"data not object", mutate(t, set(top, "data", []any{})), "data", "must be an object"},
		{"sub data not object", mutate(t, set(sub, "data", "x")), "receipts[0].data", "must be an object"},
		{"bad type", mutate(t, set(top, "type", "B2C")), "type", "must be one of B2C_RECEIPT, B2B_RECEIPT, B2C_INVOICE, B2B_INVOICE"},
		{"type as number", mutate(t, set(top, "type", json.Number("1"))), "type", "must be one of B2C_RECEIPT"},
		{"bad taxType", mutate(t, set(sub, "taxType", "VAT")), "receipts[0].taxType", "must be one of VAT_ABLE, VAT_FREE, VAT_ZERO, NO_VAT, NOT_VAT"},
		{"lower-case taxType", mutate(t, set(sub, "taxType", "no_vat")), "receipts[0].taxType", "must be one of"},
		{"bad barCodeType", mutate(t, set(itm, "barCodeType", "EAN13")), "receipts[0].items[0].barCodeType", "must be one of GS1, ISBN, UNDEFINED"},
		{"bad payment code", mutate(t, func(m map[string]any) { m["payments"].([]any)[0].(map[string]any)["code"] = "CARD" }), "payments[0].code", "must be one of CASH, PAYMENT_CARD"},
		{"bad payment status", mutate(t, func(m map[string]any) { m["payments"].([]any)[0].(map[string]any)["status"] = "paid" }), "payments[0].status", "must be one of PAID, PAY, REVERSED, ERROR"},
		{"payment missing paidAmount", mutate(t, func(m map[string]any) { delete(m["payments"].([]any)[0].(map[string]any), "paidAmount") }), "payments[0].paidAmount", "required"},
		{"card easy as string", mutate(t, set(card, "easy", "false")), "payments[1].data.easy", "must be true or false"},
		{"item lotNo number", mutate(t, func(m map[string]any) { itm(m)["data"].(map[string]any)["lotNo"] = json.Number("7") }), "receipts[0].items[0].data.lotNo", "must be a string"},
		{"item stockQR not array", mutate(t, func(m map[string]any) { itm(m)["data"].(map[string]any)["stockQR"] = "qr" }), "receipts[0].items[0].data.stockQR", "must be an array"},
		{"item stockQR element number", mutate(t, func(m map[string]any) { itm(m)["data"].(map[string]any)["stockQR"] = []any{"a", json.Number("1")} }), "receipts[0].items[0].data.stockQR[1]", "must be a string"},
		{"duplicate top-level key", []byte(`{"posNo":"a",` + validBody[1:]), "posNo", "duplicate key"},
		{"duplicate key in free data", mutate(t, set(top, "data", json.RawMessage(`{"a b":1,"a b":2}`))), `data["a b"]`, "duplicate key"},
		{"duplicate key in an array", mutate(t, set(top, "data", json.RawMessage(`{"x":[0,{"q":1,"q":2}]}`))), "data.x[1].q", "duplicate key"},
		{"duplicate among 40 keys", mutate(t, set(top, "data", json.RawMessage(manyKeys(40, "k7")))), "data.k7", "duplicate key"},
	}
	required := []struct {
		get  func(map[string]any) map[string]any
		path string
		keys []string
	}{
		{top, "", []string{"branchNo", "totalAmount", "merchantTin", "posNo", "type", "billIdSuffix", "receipts"}},
		{sub, "receipts[0].", []string{"totalAmount", "taxType", "merchantTin", "items"}},
		{itm, "receipts[0].items[0].", []string{"name", "measureUnit", "qty", "unitPrice", "totalAmount"}},
		{card, "payments[1].data.", []string{"terminalID", "rrn", "maskedCardNumber", "easy"}},
	}
	for _, r := range required {
		for _, k := range r.keys {
			cases = append(cases, tc{"missing " + r.path + k, mutate(t, del(r.get, k)), r.path + k, "required"})
		}
	}
	require.GreaterOrEqual(t, len(cases), 25)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseCreate(c.body)
			require.Nil(t, got)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.NotEmpty(t, ve.Errors)
			require.Equal(t, c.field, ve.Errors[0].Field, "all: %v", ve.Errors)
			require.Contains(t, ve.Errors[0].Problem, c.problem)
			require.Equal(t, c.field+": "+ve.Errors[0].Problem, err.Error())
		})
	}
}

func TestParseCreateListsEveryProblemInOrder(t *testing.T) {
	t.Parallel()
	body := mutate(t, func(m map[string]any) {
		delete(m, "posNo")
		m["type"] = "X"
		itm(m)["qty"] = "1"
		m["payments"].([]any)[0].(map[string]any)["code"] = "GOLD"
	})
	_, err := ParseCreate(body)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	var fields []string
	for _, e := range ve.Errors {
		fields = append(fields, e.Field)
	}
	// json.Marshal sorts map keys: payments, receipts, type; then the
	// missing required field of the object.
	require.Equal(t, []string{"payments[0].code", "receipts[0].items[0].qty", "type", "posNo"}, fields)
}

func TestParseCreateCapsProblems(t *testing.T) {
	t.Parallel()
	items := make([]any, 300)
	for i := range items {
		items[i] = map[string]any{}
	}
	_, err := ParseCreate(mutate(t, set(sub, "items", items)))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Errors, MaxProblems+1)
	require.Equal(t, "1400 more problems not listed", ve.Errors[MaxProblems].Problem)
}

func TestParseCreateAccepts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body []byte
	}{
		{"every documented field", []byte(validBody)},
		{"NO_VAT", mutate(t, set(sub, "taxType", "NO_VAT"))},
		{"NOT_VAT", mutate(t, set(sub, "taxType", "NOT_VAT"))},
		{"VAT_FREE and VAT_ZERO", mutate(t, func(m map[string]any) {
			sub(m)["taxType"] = "VAT_FREE"
			itm(m)["taxProductCode"] = "320"
			extra := mutate(t, func(m map[string]any) {
				sub(m)["taxType"] = "VAT_ZERO"
				itm(m)["taxProductCode"] = "502"
			})
			var again map[string]any
			dec := json.NewDecoder(bytes.NewReader(extra))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&again))
			m["receipts"] = append(m["receipts"].([]any), again["receipts"].([]any)[0])
		})},
		{"B2B invoice with reportMonth", mutate(t, func(m map[string]any) {
			m["type"] = "B2B_INVOICE"
			m["customerTin"] = "123"
			m["reportMonth"] = "2026-10"
		})},
		{"production spellings", mutate(t, func(m map[string]any) {
			m["totalVat"] = json.Number("1.5")
			m["inActiveId"] = "x"
			sub(m)["somethingNew"] = map[string]any{"deep": []any{1, "x", nil}}
		})},
		{"unknown field of any type", mutate(t, set(itm, "colour", []any{true, nil}))},
		{"big exact decimals", mutate(t, func(m map[string]any) {
			m["totalAmount"] = json.Number("999999999999999.999999999999999999")
			itm(m)["qty"] = json.Number("0.000000000000000001")
			itm(m)["unitPrice"] = json.Number("123456789012345")
			sub(m)["totalAmount"] = json.Number("-12.5E+3")
			itm(m)["totalAmount"] = json.Number("0.30000000000000004")
			sub(m)["totalVAT"] = json.Number("0e999999")
			m["totalVAT"] = json.Number("1.0000000000000000000000000000")
		})},
		{"optional fields null", mutate(t, func(m map[string]any) {
			m["customerTin"] = nil
			m["totalCityTax"] = nil
			m["reportMonth"] = nil
			m["data"] = nil
			itm(m)["data"] = nil
			itm(m)["barCode"] = nil
		})},
		{"only what the tax service needs", []byte(`{"branchNo":"1","totalAmount":1,"merchantTin":"37900846788","posNo":"3",` +
			`"type":"B2C_RECEIPT","billIdSuffix":"4","districtCode":"0102","receipts":[{"totalAmount":1,"taxType":"NO_VAT",` +
			`"merchantTin":"2","items":[{"name":"a","measureUnit":"ш","qty":1,"unitPrice":1,"totalAmount":1}]}],` +
			`"payments":[{"code":"CASH","status":"PAID","paidAmount":1}]}`)},
		{"nesting exactly 32", mutate(t, set(top, "data", json.RawMessage(`{"x":`+deep(30, "[", "]")+`}`)))},
		{"whitespace around", []byte("\r\n\t " + validBody + " \n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseCreate(c.body)
			require.NoError(t, err)
			require.Equal(t, "37900846788", got.MerchantTin)
			require.NotEmpty(t, got.PosNo)
			require.NotEmpty(t, got.Type)
		})
	}
}

func TestParseCreateFields(t *testing.T) {
	t.Parallel()
	body := mutate(t, func(m map[string]any) {
		second := map[string]any{}
		for k, v := range sub(m) {
			second[k] = v
		}
		second["merchantTin"] = "5317878"
		m["receipts"] = append(m["receipts"].([]any), second, sub(m))
	})
	got, err := ParseCreate(body)
	require.NoError(t, err)
	require.Equal(t, &Create{
		MerchantTin: "37900846788", PosNo: "POS-1", BillIDSuffix: "000123", BranchNo: "001",
		Type: "B2C_RECEIPT", CustomerTin: "", ConsumerNo: "99887766", Fingerprint: Fingerprint(body),
		TINs: []string{"37900846788", "5317878"},
	}, got)
}

func TestParseDelete(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		body    string
		want    *Delete
		field   string
		problem string
	}{
		{"id only", `{"id":"Q000000000042"}`, &Delete{ID: "Q000000000042"}, "", ""},
		{"upstream date form", `{"id":"000000000000000000000000000000001","date":"2026-11-22 10:15:00"}`,
			&Delete{ID: "000000000000000000000000000000001", Date: "2026-11-22 10:15:00"}, "", ""},
		{"ISO 8601 with zone", `{"id":"x","date":"2026-11-22T10:15:00+08:00"}`, &Delete{ID: "x", Date: "2026-11-22T10:15:00+08:00"}, "", ""},
		{"ISO 8601 UTC fraction", `{"id":"x","date":"2026-11-22T02:15:00.123Z"}`, &Delete{ID: "x", Date: "2026-11-22T02:15:00.123Z"}, "", ""},
		{"ISO 8601 local", `{"id":"x","date":"2026-11-22T10:15:00"}`, &Delete{ID: "x", Date: "2026-11-22T10:15:00"}, "", ""},
		{"null date and unknown field", `{"id":"x","date":null,"reason":1}`, &Delete{ID: "x"}, "", ""},
		{"missing id", `{"date":"2026-11-22 10:15:00"}`, nil, "id", "required"},
		{"empty id", `{"id":""}`, nil, "id", "must not be empty"},
		{"numeric id", `{"id":42}`, nil, "id", "must be a string"},
		{"bad date", `{"id":"x","date":"22/11/2026"}`, nil, "date", "must be a date like"},
		{"date number", `{"id":"x","date":20261122}`, nil, "date", "must be a string"},
		{"not an object", `["x"]`, nil, "body", "must be a JSON object"},
		{"trailing data", `{"id":"x"}]`, nil, "body", "unexpected data after the JSON value"},
		{"duplicate id", `{"id":"x","id":"y"}`, nil, "id", "duplicate key"},
		{"invalid UTF-8", "{\"id\":\"\xc3\x28\"}", nil, "body", "invalid UTF-8 at byte 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseDelete([]byte(c.body))
			if c.want != nil {
				require.NoError(t, err)
				require.Equal(t, c.want, got)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, c.field, ve.Errors[0].Field)
			require.Contains(t, ve.Errors[0].Problem, c.problem)
		})
	}
}

func TestNumberProblem(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"0": "", "-0": "", "0.0": "", "0e5000": "", "0.000e-99999": "",
		"999999999999999":              "",
		"1000000000000000":             problemTooBig,
		"1e14":                         "",
		"1E15":                         problemTooBig,
		"100000000000000.0e1":          problemTooBig,
		"0.1e16":                       problemTooBig,
		"-999999999999999.5":           "",
		"1e400":                        problemTooBig,
		"1e+00400":                     problemTooBig,
		"0.000000000000000001":         "",
		"1e-18":                        "",
		"1e-19":                        problemTooPrecise,
		"1.5e-18":                      problemTooPrecise,
		"1.0000000000000000000000e-18": "",
		"12.50000000000000000000000":   "",
		"1e-400":                       problemTooPrecise,
		"5e-99999":                     problemTooPrecise,
		"0.30000000000000004":          "",
	}
	for lit, want := range cases {
		require.Equal(t, want, numberProblem(lit), lit)
		require.True(t, json.Valid([]byte(lit)), lit)
	}
}

// numberProblem's shortcut for short literals without an exponent says
// what counting their digits (rangeProblem) says, for literals of every
// length up to 20 and every shape.
func TestNumberProblemShortcut(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "0000123456789"[r.IntN(13)]
		}
		return string(b)
	}
	shortcuts := 0
	for range 200_000 {
		lit := ""
		if r.IntN(2) == 0 {
			lit = "-"
		}
		lit += digits(1 + r.IntN(17))
		if r.IntN(2) == 0 {
			lit += "." + digits(1+r.IntN(19))
		}
		if r.IntN(4) == 0 {
			lit += "eE"[r.IntN(2):][:1] + "+-"[r.IntN(2):][:r.IntN(2)] + digits(1+r.IntN(3))
		}
		if len(lit) > 20 {
			continue
		}
		if len(lit) <= MaxIntDigits && !strings.ContainsAny(lit, "eE") {
			shortcuts++
		}
		require.Equal(t, rangeProblem(lit), numberProblem(lit), lit)
	}
	require.Greater(t, shortcuts, 10_000)
}

func TestDefaultKey(t *testing.T) {
	t.Parallel()
	ub, err := time.LoadLocation("Asia/Ulaanbaatar")
	require.NoError(t, err)
	c := &Create{MerchantTin: "379", PosNo: "1", BillIDSuffix: "007"}
	late := time.Date(2026, 11, 21, 16, 30, 0, 0, time.UTC) // 00:30 on the 22nd in UB
	require.Equal(t, `auto:"379"/"1"/"007"/2026-11-22`, DefaultKey(c, late, ub))
	require.Equal(t, `auto:"379"/"1"/"007"/2026-11-21`, DefaultKey(c, late, time.UTC))
	require.Equal(t, DefaultKey(c, late, ub), DefaultKey(c, late.Add(23*time.Hour), ub))
	require.NotEqual(t, DefaultKey(c, late, ub), DefaultKey(c, late.Add(24*time.Hour), ub))

	a := DefaultKey(&Create{MerchantTin: `a"/"b`, PosNo: "c"}, late, ub)
	b := DefaultKey(&Create{MerchantTin: "a", PosNo: `b"/"c`}, late, ub)
	require.NotEqual(t, a, b)
	require.Equal(t, DefaultKey(c, late.In(time.Local), nil), DefaultKey(c, late, time.Local))
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	compact := mutate(t, func(map[string]any) {})
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, compact, "", "    "))
	require.Equal(t, Fingerprint(compact), Fingerprint(indented.Bytes()))
	require.Len(t, Fingerprint(compact), 64)
	for _, body := range [][]byte{compact, indented.Bytes()} {
		c, err := ParseCreate(body)
		require.NoError(t, err)
		require.Equal(t, Fingerprint(compact), c.Fingerprint, "the parser's fingerprint")
	}
	require.NotEqual(t, Fingerprint([]byte(`{"a":1}`)), Fingerprint([]byte(`{"a":1.0}`)))
	require.NotEqual(t, Fingerprint([]byte(`{"a":"x y"}`)), Fingerprint([]byte(`{"a":"xy"}`)))
	require.Equal(t,
		"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
		Fingerprint([]byte("hello")), "invalid JSON is hashed as it is")
}

func TestValidationErrorIsAnError(t *testing.T) {
	t.Parallel()
	_, err := ParseCreate([]byte(`{}`))
	var ve *ValidationError
	require.True(t, errors.As(err, &ve))
	require.Equal(t, "branchNo: required", err.Error())
	require.Len(t, ve.Errors, 9, "7 fields the description requires, districtCode and payments")
}

// BenchmarkParseCreate measures validation of a typical receipt (indented,
// and compact as most POS software sends it: its fingerprint needs no
// compaction) and of a large one (200 items); run with go test
// -bench=ParseCreate.
func BenchmarkParseCreate(b *testing.B) {
	dec := json.NewDecoder(strings.NewReader(validBody))
	dec.UseNumber()
	var m map[string]any
	require.NoError(b, dec.Decode(&m))
	one := itm(m)
	items := make([]any, 200)
	for i := range items {
		items[i] = one
	}
	sub(m)["items"] = items
	large, err := json.Marshal(m)
	require.NoError(b, err)
	for _, bc := range []struct {
		name string
		body []byte
	}{{"typical", []byte(validBody)}, {"typical compact", compact(b, validBody)}, {"200 items", large}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseCreate(bc.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParseCreateConcurrently: parsers share pooled blocks for their trees;
// each of many concurrent parses still reads its own body (run with -race).
func TestParseCreateConcurrently(t *testing.T) {
	t.Parallel()
	bodies := make([][]byte, 50)
	for i := range bodies {
		bodies[i] = mutate(t, set(top, "billIdSuffix", fmt.Sprintf("s%d", i)))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				n := (g + i) % len(bodies)
				suffix := fmt.Sprintf("s%d", n)
				c, err := ParseCreate(bodies[n])
				if err != nil || c.BillIDSuffix != suffix || c.MerchantTin == "" {
					t.Errorf("parse %s: %+v %v", suffix, c, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// PaymentCardData is "used when code is PAYMENT_CARD": a cash payment with a
// data object (some POS programs always write one) is valid and forwarded
// as sent, while the same object on a card payment is checked.
func TestCardDataIsCheckedForCardPaymentsOnly(t *testing.T) {
	t.Parallel()
	cashWithData := mutate(t, func(m map[string]any) {
		m["payments"].([]any)[0].(map[string]any)["data"] = map[string]any{"terminalID": nil, "note": "x"}
	})
	_, err := ParseCreate(cashWithData)
	require.NoError(t, err)

	cashWithString := mutate(t, func(m map[string]any) {
		m["payments"].([]any)[0].(map[string]any)["data"] = "x"
	})
	_, err = ParseCreate(cashWithString)
	require.ErrorContains(t, err, "payments[0].data: must be an object")

	cardWithEmpty := mutate(t, func(m map[string]any) {
		m["payments"].([]any)[1].(map[string]any)["data"] = map[string]any{}
	})
	_, err = ParseCreate(cardWithEmpty)
	require.ErrorContains(t, err, "payments[1].data.terminalID: required")
}

// TestKeyFieldBound: identifiers are bounded in characters, not bytes: 128
// Cyrillic letters (256 bytes) pass, 129 are refused naming the field.
func TestKeyFieldBound(t *testing.T) {
	t.Parallel()
	at := strings.Repeat("Ө", MaxKeyField)
	got, err := ParseCreate(mutate(t, set(top, "billIdSuffix", at)))
	require.NoError(t, err)
	require.Equal(t, at, got.BillIDSuffix)
	_, err = ParseCreate(mutate(t, set(top, "billIdSuffix", at+"Ө")))
	require.EqualError(t, err, "billIdSuffix: must be at most 128 characters")
}

// Every object of the schema names each field once and has fewer than 64
// of them: checkObject marks the fields it saw in a 64-bit set, and a
// second field of the same name would be reported missing.
func TestSchemaFieldsAreUniqueAndFew(t *testing.T) {
	t.Parallel()
	var walk func(path string, fields []field)
	walk = func(path string, fields []field) {
		require.Less(t, len(fields), 64, "%s: fields", path)
		seen := map[string]bool{}
		for _, f := range fields {
			require.False(t, seen[f.name], "%s.%s named twice", path, f.name)
			seen[f.name] = true
			for e := &f; e != nil; e = e.elem {
				walk(path+"."+f.name, e.obj)
			}
		}
	}
	walk("create", createRequest)
	walk("delete", deleteRequest)
}
