package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store/storetest"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// mutationPaths are the places FuzzReceiptMutations changes: every field
// of the interface at each level, and a few unknown ones.
var mutationPaths = []string{
	"branchNo", "totalAmount", "merchantTin", "posNo", "type", "billIdSuffix", "receipts",
	"totalVAT", "totalCityTax", "districtCode", "customerTin", "consumerNo", "inactiveId",
	"invoiceId", "reportMonth", "data", "payments", "unknownField",
	"receipts.0.totalAmount", "receipts.0.taxType", "receipts.0.merchantTin", "receipts.0.items",
	"receipts.0.customerTin", "receipts.0.bankAccountNo", "receipts.0.iBan", "receipts.0.data",
	"receipts.0.items.0.name", "receipts.0.items.0.qty", "receipts.0.items.0.unitPrice",
	"receipts.0.items.0.barCodeType", "receipts.0.items.0.data",
	"payments.0.code", "payments.0.status", "payments.0.paidAmount", "payments.0.data",
	// What the rules of receipt's table look at besides (rules.go).
	"totalVat", "receipts.0.totalVAT", "receipts.0.items.0.taxProductCode", "receipts.0.items.0.barCode",
	"receipts.0.items.0.measureUnit", "receipts.0.items.0.totalAmount",
}

// mutate sets (or with kind 0 deletes) the field at path of m to a value
// made of v: kind 1 the string v, 2 v repeated n times, 3 v as raw JSON
// (a string when it is not JSON), 4 a bool, 5 null, 6 {v: v}, 7 [v].
func mutate(m map[string]any, path string, kind uint8, v string, n uint16) {
	parts := strings.Split(path, ".")
	var cur any = m
	for _, p := range parts[:len(parts)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			if len(c) == 0 {
				return
			}
			cur = c[0]
		}
	}
	obj, ok := cur.(map[string]any)
	if !ok {
		return
	}
	key := parts[len(parts)-1]
	var val any
	switch kind % 8 {
	case 0:
		delete(obj, key)
		return
	case 1:
		val = v
	case 2:
		val = strings.Repeat(v, int(n))
	case 3:
		val = v
		if json.Valid([]byte(v)) {
			val = json.RawMessage(v)
		}
	case 4:
		val = len(v)%2 == 0
	case 5:
		val = nil
	case 6:
		val = map[string]any{v: v}
	case 7:
		val = []any{v}
	}
	obj[key] = val
}

func entriesStored(t *testing.T, q *queue.Queue) int {
	counts, err := q.Counts()
	if err != nil {
		t.Fatalf("counts: %v", err)
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// FuzzReceiptMutations drives the real HTTP handler (every security rule
// and route) on a real store with a valid receipt changed in one place, up
// to 65,535 characters long, in both queued_answer modes, and checks the
// contract: no 5xx but a 503 or 507 where docs/contract.md allows one; a refusal
// (4xx) stores nothing; every 2xx and every queued-answer 503 carries
// X-Queue-Id and is stored; a first 2xx adds exactly one entry, a replay
// none. The seeds, which plain `go test` runs, include the oversized key
// fields that once gave 500.
//
//	go test -run '^$' -fuzz FuzzReceiptMutations -fuzztime 30s ./internal/api
func FuzzReceiptMutations(f *testing.F) {
	for i := range mutationPaths {
		f.Add(uint8(i), uint8(0), "", uint16(0), "", i%2 == 1)
		f.Add(uint8(i), uint8(1), "", uint16(0), "", false)
		f.Add(uint8(i), uint8(2), "7", uint16(40000), "", i%2 == 0)
		f.Add(uint8(i), uint8(3), "1e400", uint16(0), "", false)
	}
	f.Add(uint8(5), uint8(1), "dup", uint16(0), "key-1", true)
	f.Add(uint8(0), uint8(7), "\xff", uint16(0), "", false)
	f.Add(uint8(1), uint8(3), "-0.000000000000000000000001", uint16(0), "k", false)
	st := storetest.Open(f)
	q, err := queue.Open(context.Background(), st, queue.Options{})
	if err != nil {
		f.Fatal(err)
	}
	handlers := map[bool]http.Handler{
		false: api.New(api.Deps{Store: st, Queue: q}, api.Options{}).Handler(),
		true:  api.New(api.Deps{Store: st, Queue: q}, api.Options{QueuedAnswer: api.QueuedAnswerError}).Handler(),
	}
	f.Fuzz(func(t *testing.T, at, kind uint8, v string, n uint16, key string, asError bool) {
		dec := json.NewDecoder(strings.NewReader(testkit.Receipt("fz")))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		mutate(m, mutationPaths[int(at)%len(mutationPaths)], kind, v, n)
		body, err := json.Marshal(m)
		if err != nil {
			return // a value encoding/json cannot write (invalid raw JSON): nothing to send
		}
		req := httptest.NewRequest(http.MethodPost, "/rest/receipt", bytes.NewReader(body))
		req.Host = "127.0.0.1:7080"
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(api.HeaderIdempotencyKey, key)
		}
		before := entriesStored(t, q)
		rec := httptest.NewRecorder()
		handlers[asError].ServeHTTP(rec, req)
		checkContract(t, rec, before, entriesStored(t, q), asError, body)
	})
}

// checkContract checks one answer against docs/contract.md given how many
// entries were stored before and after it.
func checkContract(t *testing.T, rec *httptest.ResponseRecorder, before, after int, asError bool, body []byte) {
	code, id := rec.Code, rec.Header().Get(api.HeaderQueueID)
	replay := rec.Header().Get(api.HeaderReplayed) == "true"
	switch {
	case code == http.StatusServiceUnavailable && asError:
		// accept.queued_answer = "error": stored, queued, named.
		if id == "" || after < before {
			t.Fatalf("503 without X-Queue-Id or lost entry: %s", rec.Body)
		}
	case code == http.StatusInsufficientStorage:
		t.Fatalf("507 on a healthy store: %s", rec.Body)
	case code >= 500:
		t.Fatalf("server error %d for %.300q: %s", code, body, rec.Body)
	case code/100 == 2:
		if id == "" {
			t.Fatalf("%d without X-Queue-Id", code)
		}
		if want := before + 1; !replay && after != want {
			t.Fatalf("a first acceptance stored %d entries", after-before)
		}
		if replay && after != before {
			t.Fatalf("a replay stored %d entries", after-before)
		}
	case code/100 == 4:
		if after != before {
			t.Fatalf("refusal %d stored %d entries: %s", code, after-before, rec.Body)
		}
		if id != "" && code != http.StatusConflict {
			t.Fatalf("refusal %d with X-Queue-Id %s", code, id)
		}
	default:
		t.Fatalf("unexpected status %d: %s", code, rec.Body)
	}
}
