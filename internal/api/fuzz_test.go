package api_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/store/storetest"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// FuzzCreateHandler sends any body (and any Idempotency-Key) to POST
// /rest/receipt on a real store: the answer is never a 5xx or a panic, a 2xx
// only for a body ParseCreate accepts, and an accepted body is never refused
// as malformed.
func FuzzCreateHandler(f *testing.F) {
	f.Add([]byte(testkit.Receipt("000001")), "")
	f.Add([]byte(testkit.Receipt("000002")), "key-1")
	f.Add([]byte(`{}`), "")
	f.Add([]byte(`{"a":[[[[[[]]]]]]}`), "\x00")
	for name, c := range ruleCases {
		f.Add([]byte(breakRuleOf(f, "F1", c)), name)
	}
	for _, file := range []string{"python-sdk-b2c.json", "python-sdk-b2b.json", "python-sdk-refused.json",
		"go-client-testvats.json", "vendor-b2c-invoice.json"} {
		if b, err := os.ReadFile(filepath.Join("..", "receipt", "testdata", "clients", file)); err == nil {
			f.Add(b, "")
		}
	}
	for _, c := range malformedCases(f) {
		if c.method == "" && len(c.body) < 64<<10 {
			f.Add([]byte(c.body), "")
		}
	}
	st := storetest.Open(f)
	q, err := queue.Open(context.Background(), st, queue.Options{})
	if err != nil {
		f.Fatal(err)
	}
	h := api.New(api.Deps{Store: st, Queue: q}, api.Options{MaxBody: 256 << 10}).Handler()
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		req := httptest.NewRequest(http.MethodPost, "/rest/receipt", bytes.NewReader(body))
		req.Host = "localhost:7080"
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(api.HeaderIdempotencyKey, key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		code := rec.Code
		if code >= 500 {
			t.Fatalf("server error %d for %q: %s", code, body, rec.Body)
		}
		_, perr := receipt.ParseCreate(body)
		if code/100 == 2 {
			if perr != nil {
				t.Fatalf("accepted a body ParseCreate refuses (%v): %q", perr, body)
			}
			if rec.Header().Get(api.HeaderQueueID) == "" {
				t.Fatalf("2xx without X-Queue-Id")
			}
		}
		if perr == nil && len(body) <= 256<<10 && code == http.StatusBadRequest && key == "" {
			t.Fatalf("refused a valid body: %s", rec.Body)
		}
	})
}
