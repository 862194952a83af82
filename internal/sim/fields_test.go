package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
)

// fieldRoute is one "== METHOD PATH" block of testdata/fields.txt.
type fieldRoute struct {
	method, target string
	fields         [][2]string // path, type
}

func readFieldList(t *testing.T) []fieldRoute {
	t.Helper()
	f, err := os.Open("testdata/fields.txt")
	require.NoError(t, err)
	defer f.Close()
	var routes []fieldRoute
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "== "):
			method, target, ok := strings.Cut(strings.TrimPrefix(line, "== "), " ")
			require.True(t, ok, "line %d: want == METHOD PATH", n)
			routes = append(routes, fieldRoute{method: method, target: target})
		default:
			path, typ, ok := strings.Cut(line, " ")
			require.True(t, ok && len(routes) > 0, "line %d: want a field line after a route", n)
			r := &routes[len(routes)-1]
			r.fields = append(r.fields, [2]string{path, typ})
		}
	}
	require.NoError(t, sc.Err())
	return routes
}

// fieldRequests are the bodies and headers of the routes that need them.
var fieldRequests = map[string]struct {
	body    string
	headers map[string]string
}{
	"POST /rest/receipt": {body: string(sim.SampleReceipt("FIELDS", "000001"))},
	"GET /api/inventory/stock/getStockQr?stockQr=BF6B1FBA86FB4C41ADDBB01C09C024F5": {
		headers: map[string]string{"Authorization": "Bearer test-token"}},
	"POST /api/tpi/receipt/saveOprMerchants": {body: `{"posNo":"10005299","merchantTins":["77001059076"]}`,
		headers: map[string]string{"X-API-KEY": "test-key"}},
}

// TestFieldList pins every route's answer against testdata/fields.txt: a
// field dropped or retyped in the simulator fails here.
func TestFieldList(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{Seed: 7})
	routes := readFieldList(t)
	require.Len(t, routes, 11, "ten routes, classification at two depths (the description lists no answer field of sendData and delete)")
	for _, r := range routes {
		t.Run(r.method+" "+r.target, func(t *testing.T) {
			key := r.method + " " + r.target
			extra := fieldRequests[key]
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, r.method, s.URL()+r.target, strings.NewReader(extra.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range extra.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			doc := decodeUseNumber(t, body)
			for _, f := range r.fields {
				require.NoError(t, checkField(doc, f[0], f[1]), "%s in %s", f[0], body)
			}
		})
	}
}

// TestFieldListCatchesADroppedField: the checker fails on a missing,
// retyped or empty-listed field, so TestFieldList can fail.
func TestFieldListCatchesADroppedField(t *testing.T) {
	t.Parallel()
	doc := decodeUseNumber(t, []byte(`{"a":{"b":"x"},"l":[{"n":1},{"n":2.5}],"e":[],"z":null}`))
	require.NoError(t, checkField(doc, "a.b", "string"))
	require.NoError(t, checkField(doc, "l[].n", "number"))
	require.NoError(t, checkField(doc, "z", "string|null"))
	require.Error(t, checkField(doc, "a.c", "string"), "missing")
	require.Error(t, checkField(doc, "a.b", "number"), "retyped")
	require.Error(t, checkField(doc, "l[].n", "integer"), "2.5 is no integer")
	require.Error(t, checkField(doc, "e[].x", "string"), "an empty list proves nothing")
	require.Error(t, checkField(doc, "z", "string"), "null where not allowed")
}

func decodeUseNumber(t *testing.T, body []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	require.NoError(t, dec.Decode(&doc), "%s", body)
	return doc
}

// checkField checks that path (see testdata/fields.txt) exists in doc with
// type typ.
func checkField(doc any, path, typ string) error {
	vals := []any{doc}
	for _, step := range strings.Split(path, ".") {
		name := strings.TrimRight(step, "[]")
		each := (len(step) - len(name)) / 2
		var next []any
		for _, v := range vals {
			if name != "" {
				obj, ok := v.(map[string]any)
				if !ok {
					return fmt.Errorf("%s: parent is not an object", name)
				}
				if v, ok = obj[name]; !ok {
					return fmt.Errorf("%s: missing", name)
				}
			}
			next = append(next, v)
		}
		for range each {
			var elems []any
			for _, v := range next {
				list, ok := v.([]any)
				if !ok || len(list) == 0 {
					return fmt.Errorf("%s: not a non-empty array", step)
				}
				elems = append(elems, list...)
			}
			next = elems
		}
		vals = next
	}
	for _, v := range vals {
		if !hasType(v, typ) {
			return fmt.Errorf("%s: %v is not %s", path, v, typ)
		}
	}
	return nil
}

func hasType(v any, typ string) bool {
	for _, t := range strings.Split(typ, "|") {
		switch x := v.(type) {
		case nil:
			if t == "null" {
				return true
			}
		case string:
			if t == "string" {
				return true
			}
		case bool:
			if t == "boolean" {
				return true
			}
		case json.Number:
			if t == "number" || (t == "integer" && !strings.ContainsAny(string(x), ".eE")) {
				return true
			}
		case map[string]any:
			if t == "object" {
				return true
			}
		case []any:
			if t == "array" {
				return true
			}
		}
	}
	return false
}
