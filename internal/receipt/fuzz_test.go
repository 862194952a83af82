package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkRefusal asserts the contract every refusal keeps: a
// *ValidationError with at least one problem, each with a field and a
// problem, whose Error() is the first of them.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T %v is not a *ValidationError", err, err)
	}
	if len(ve.Errors) == 0 {
		t.Fatal("ValidationError without problems")
	}
	for _, fe := range ve.Errors {
		if fe.Field == "" || fe.Problem == "" {
			t.Fatalf("problem without field or text: %+v", fe)
		}
	}
	if err.Error() != ve.Errors[0].Field+": "+ve.Errors[0].Problem {
		t.Fatalf("Error() %q is not the first problem", err.Error())
	}
}

// addRuleSeeds adds the published clients' receipts and validBody
// breaking each rule the tax service's refusals added.
func addRuleSeeds(f *testing.F) {
	for _, c := range clientReceipts {
		if b, err := os.ReadFile(filepath.Join("testdata", "clients", c.file)); err == nil {
			f.Add(b)
		}
	}
	for _, change := range []func(m map[string]any){
		func(m map[string]any) { m["districtCode"] = "01O2" },
		func(m map[string]any) { delete(m, "payments") },
		func(m map[string]any) { delete(sub(m), "totalVAT"); sub(m)["totalVat"] = "1" },
		func(m map[string]any) { m["type"], m["customerTin"] = "B2B_INVOICE", nil },
		func(m map[string]any) { sub(m)["taxType"], itm(m)["taxProductCode"] = "VAT_ZERO", "" },
		func(m map[string]any) { m["reportMonth"] = "2026-10" },
	} {
		var b bytes.Buffer
		dec := json.NewDecoder(strings.NewReader(validBody))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) == nil {
			change(m)
			_ = json.NewEncoder(&b).Encode(m)
			f.Add(b.Bytes())
		}
	}
}

func FuzzParseCreate(f *testing.F) {
	f.Add([]byte(validBody))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"branchNo":"1","totalAmount":1,"merchantTin":"2","posNo":"3","type":"B2C_RECEIPT",` +
		`"billIdSuffix":"4","receipts":[{"totalAmount":1e400,"taxType":"NOT_VAT","merchantTin":"2","items":[]}]}`))
	f.Add([]byte(`{"data":` + deep(40, "[", "]") + `}`))
	f.Add([]byte("{\"a\":\"\xff\"}"))
	f.Add([]byte(`{"a":1,"a":2} x`))
	f.Add([]byte(`{"receipts":[null,{"items":[{"qty":"1","data":{"stockQR":[1]}}]}],"payments":[{"data":{}}]}`))
	addRuleSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		// One rule off, picked by the body: a body every rule takes is
		// taken with fewer rules.
		r := rules[len(body)%len(rules)]
		fewer, err := NewRules([]string{r.Name})
		if err != nil {
			fewer = &Rules{}
		}
		_, ferr := fewer.ParseCreate(body)
		c, err := ParseCreate(body)
		if err != nil {
			checkRefusal(t, err)
			if ferr != nil {
				checkRefusal(t, ferr)
			}
			return
		}
		if ferr != nil {
			t.Fatalf("taken with every rule, refused without %s: %v", r.Name, ferr)
		}
		checkTheWorldsRefusals(t, body)
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if c.MerchantTin == "" || c.PosNo == "" || c.BillIDSuffix == "" || c.BranchNo == "" || len(c.TINs) == 0 {
			t.Fatalf("accepted without required ids: %+v", c)
		}
		if c.Fingerprint != Fingerprint(body) {
			t.Fatalf("parsed fingerprint %s, Fingerprint %s", c.Fingerprint, Fingerprint(body))
		}
	})
}

// checkTheWorldsRefusals checks an accepted body, decoded by
// encoding/json rather than our own reader, against what live staging is
// known to refuse: no districtCode of 4 digits, no payments, no totalVAT
// on a VAT_ABLE receipt, a B2B receipt without its buyer.
func checkTheWorldsRefusals(t *testing.T, body []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("accepted a body encoding/json cannot decode: %v", err)
	}
	dc, _ := m["districtCode"].(string)
	if len(dc) != 4 || strings.Trim(dc, "0123456789") != "" {
		t.Fatalf("accepted districtCode %q", m["districtCode"])
	}
	if p, _ := m["payments"].([]any); len(p) == 0 {
		t.Fatalf("accepted payments %v", m["payments"])
	}
	hasVAT := func(o map[string]any) bool {
		_, a := o["totalVAT"].(json.Number)
		_, b := o["totalVat"].(json.Number)
		return a || b
	}
	subs, _ := m["receipts"].([]any)
	vatable := false
	for _, s := range subs {
		if o, _ := s.(map[string]any); o["taxType"] == "VAT_ABLE" {
			vatable = true
			if !hasVAT(o) {
				t.Fatalf("accepted a VAT_ABLE sub-receipt without totalVAT: %v", o)
			}
		}
	}
	if vatable && !hasVAT(m) {
		t.Fatal("accepted a VAT_ABLE receipt without totalVAT")
	}
	if tin, _ := m["customerTin"].(string); (m["type"] == "B2B_RECEIPT" || m["type"] == "B2B_INVOICE") && tin == "" {
		t.Fatal("accepted a B2B receipt without customerTin")
	}
}

func FuzzParseDelete(f *testing.F) {
	f.Add([]byte(`{"id":"Q000000000042"}`))
	f.Add([]byte(`{"id":"1","date":"2026-11-22 10:15:00"}`))
	f.Add([]byte(`{"id":"1","date":"2026-11-22T10:15:00+08:00"}`))
	f.Add([]byte(`{"id":"","date":5}`))
	f.Add([]byte(`[[[[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := ParseDelete(body)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if d.ID == "" {
			t.Fatal("accepted an empty id")
		}
		if d.Date != "" && !validDate(d.Date) {
			t.Fatalf("accepted date %q", d.Date)
		}
	})
}

// FuzzParseTree checks the hand-written JSON reader (walker.parse) against encoding/json:
// whatever it accepts is valid JSON, and it refuses valid JSON only for the
// rules it adds (an object at the top, depth, duplicate keys).
func FuzzParseTree(f *testing.F) {
	f.Add([]byte(validBody))
	f.Add([]byte(`{"a":[1,-0.5e+3,true,false,null,"\u00e9\n"],"b":{}}`))
	f.Add([]byte(`{"a":01}`))
	f.Add([]byte(`{"a":"\x"}`))
	f.Add([]byte(`{"a":[1,]} `))
	f.Add([]byte(`{"a":1}{"b":2}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := new(walker).parse(body)
		valid := json.Valid(body)
		if err == nil {
			if !valid {
				t.Fatalf("accepted invalid JSON %q", body)
			}
			return
		}
		checkRefusal(t, err)
		var ve *ValidationError
		errors.As(err, &ve)
		problem := ve.Errors[0].Problem
		grammar := strings.HasPrefix(problem, "invalid JSON") || strings.HasPrefix(problem, "unexpected data") ||
			strings.HasPrefix(problem, "empty body")
		if valid && grammar {
			t.Fatalf("refused valid JSON %q: %v", body, err)
		}
		if !valid && utf8.Valid(body) && !grammar && problem != "must be a JSON object" {
			var v any
			if json.Unmarshal(body, &v) == nil {
				t.Fatalf("json.Valid and Unmarshal disagree on %q", body)
			}
			if !strings.HasPrefix(problem, "nesting deeper") && problem != "duplicate key" {
				t.Fatalf("invalid JSON %q refused for another reason: %v", body, err)
			}
		}
	})
}

// FuzzFingerprint: the shortcut for a body without whitespace outside its
// strings gives the fingerprint json.Compact gives, valid JSON or not.
func FuzzFingerprint(f *testing.F) {
	for _, seed := range []string{`{"a":"b c","d":[1, 2]}`, `{"a":"x\\"}`, `{"a":"\\" "}`, `{ }`, `{"a":"\\"}`,
		`not json`, `"\t"`, `{"a":"b\"c"}`, "{\"a\":\"\t\"}", `{"a":1}` + "\n", `"unterminated`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var buf bytes.Buffer
		want := body
		if err := json.Compact(&buf, body); err == nil {
			want = buf.Bytes()
		}
		sum := sha256.Sum256(want)
		if got := Fingerprint(body); got != hex.EncodeToString(sum[:]) {
			t.Fatalf("Fingerprint(%q) = %s, json.Compact gives %x", body, got, sum)
		}
	})
}
