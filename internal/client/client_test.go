package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
)

func simClient(t *testing.T) (*sim.Sim, *client.Client) {
	t.Helper()
	s := sim.New(sim.Options{Seed: 3})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	c, err := client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: s.URL() + "/", Timeout: 5 * time.Second})
	require.NoError(t, err)
	return s, c
}

func TestCreateAndDeleteAgainstSimulator(t *testing.T) {
	t.Parallel()
	s, c := simClient(t)
	ctx := context.Background()
	rec, err := c.CreateReceipt(ctx, []byte(validReceipt))
	require.NoError(t, err)
	require.Equal(t, 200, rec.HTTPStatus)
	require.Equal(t, client.StatusSuccess, rec.Status)
	require.Regexp(t, `^[0-9]{33}$`, rec.ID)
	require.NotEmpty(t, rec.PosID.String())
	require.Len(t, rec.SubReceipts, 1)
	require.Regexp(t, `^[0-9]{33}$`, rec.SubReceipts[0].ID)
	require.Contains(t, string(rec.Body), `"lottery":"SN `)
	at, err := rec.Time()
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), at, time.Minute, "UB date read as UTC+8")
	require.Equal(t, []byte(validReceipt), []byte(s.Receipts()[0].Body))

	payment := strings.Replace(validReceipt, `"status":"PAID"`, `"status":"PAY"`, 1)
	rec2, err := c.CreateReceipt(ctx, []byte(payment))
	require.NoError(t, err)
	require.Equal(t, client.StatusPayment, rec2.Status)

	bad := strings.Replace(validReceipt, `"totalAmount":0.1}`, `"totalAmount":0.2}`, 1)
	rec3, err := c.CreateReceipt(ctx, []byte(bad))
	cl, _ := client.ClassOf(err)
	require.Equal(t, client.Rejected, cl)
	require.Equal(t, client.StatusError, rec3.Status)
	require.Contains(t, rec3.Message, "receipts[0].totalAmount")

	raw, err := c.DeleteReceipt(ctx, rec.ID, rec.Date)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, raw.StatusCode)
	require.Equal(t, []string{rec.ID}, s.Deleted())
	_, err = c.DeleteReceipt(ctx, rec.ID, rec.Date)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, client.Rejected, e.Class)
	require.Contains(t, e.Message, "not found")
}

func TestLookupsAgainstSimulator(t *testing.T) {
	t.Parallel()
	_, c := simClient(t)
	ctx := context.Background()

	branches, err := c.BranchInfo(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, branches)
	require.Equal(t, "0101", branches[0].DistrictCode())

	codes, err := c.ProductTaxCodes(ctx)
	require.NoError(t, err)
	require.Nil(t, codes[0].EndDate, "endDate null")
	require.NotNil(t, codes[1].EndDate)
	require.Equal(t, "305", codes[0].TaxTypeCode.String())
	require.Equal(t, 2023, codes[0].StartDate.Year())

	m, err := c.MerchantInfo(ctx, "37900846788")
	require.NoError(t, err)
	require.True(t, m.Found)
	require.Nil(t, m.IsGovernment)
	require.Nil(t, m.VatpayerRegisteredDate)
	m, err = c.MerchantInfo(ctx, "0")
	require.NoError(t, err)
	require.Nil(t, m, "unknown TIN")

	tin, err := c.TinInfo(ctx, "2712345")
	require.NoError(t, err)
	require.Equal(t, "5317878", tin, "data sent as a number")
	_, err = c.TinInfo(ctx, "nobody")
	require.ErrorIs(t, err, client.ErrNotFound)

	for _, raw := range []func() (json.RawMessage, error){
		func() (json.RawMessage, error) { return c.Info(ctx) },
		func() (json.RawMessage, error) { return c.SendData(ctx) },
		func() (json.RawMessage, error) { return c.BankAccounts(ctx, "5317878") },
	} {
		b, err := raw()
		require.NoError(t, err)
		require.True(t, json.Valid(b))
	}

	path := []string{}
	for depth := 0; depth <= 6; depth++ {
		rows, err := c.Classification(ctx, path...)
		require.NoError(t, err)
		require.NotEmpty(t, rows, "depth %d", depth)
		if depth < 6 {
			path = append(path, " "+rows[0][0]+"\t") // trimmed before sending
		} else {
			require.Len(t, rows[0], 3)
		}
	}
}

func TestGetIsByteForByte(t *testing.T) {
	t.Parallel()
	body := "{\"msg\": \"\",\n \"status\":200, \"data\": [1.10, 12345.6789012345678901]}  "
	base := handlerServer(t, answer(200, map[string]string{"X-Upstream": "yes"}, body))
	c, err := client.New(client.Config{BaseURL: base, LookupBaseURL: base})
	require.NoError(t, err)
	raw, err := c.Get(context.Background(), client.OpBranchInfo, nil)
	require.NoError(t, err)
	require.Equal(t, body, string(raw.Body))
	require.Equal(t, "yes", raw.Header.Get("X-Upstream"))

	base = handlerServer(t, answer(502, nil, `{"msg":"gateway","status":502,"data":null}`))
	c, err = client.New(client.Config{BaseURL: base, LookupBaseURL: base})
	require.NoError(t, err)
	raw, err = c.Get(context.Background(), client.OpMerchantInfo, url.Values{"tin": {"1"}})
	require.NotNil(t, raw, "the answer comes with the error")
	require.Equal(t, 502, raw.StatusCode)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, client.Transient, e.Class)
	require.Equal(t, "gateway", e.Message)
}

// TestCreateBodyByteExact: the POS's bytes are what the upstream gets.
func TestCreateBodyByteExact(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []byte
	var ctype string
	base := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, ctype = b, r.Header.Get("Content-Type")
		mu.Unlock()
		_, _ = io.WriteString(w, `{"status":"SUCCESS","id":"1","posId":100000000000000000001}`)
	})
	c, err := client.New(client.Config{BaseURL: base})
	require.NoError(t, err)
	sent := []byte("{ \"totalAmount\" : 12345.6789012345678901,\n\"qty\":0.1, \"x\":1E+2, \"unknownField\":{\"a\":[1.0]}}")
	rec, err := c.CreateReceipt(context.Background(), sent)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, sent, got)
	require.Equal(t, "application/json", ctype)
	require.Equal(t, "100000000000000000001", rec.PosID.String(), "numbers never pass through float64")
}

func TestPathsHeadersAndSegments(t *testing.T) {
	t.Parallel()
	type seen struct{ path, header, lookupHeader string }
	var mu sync.Mutex
	var reqs []seen
	base := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, seen{r.URL.EscapedPath() + "?" + r.URL.RawQuery, r.Header.Get("X-Key"), r.Header.Get("X-Lookup-Key")})
		mu.Unlock()
		_, _ = io.WriteString(w, `[]`)
	})
	c, err := client.New(client.Config{
		BaseURL: base + "/pos", LookupBaseURL: base + "/public",
		Paths:   map[client.Op]string{client.OpSendData: "/rest/send"},
		Headers: map[string]string{"X-Key": "pos"}, LookupHeaders: map[string]string{"X-Lookup-Key": "pub"},
	})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = c.SendData(ctx)
	require.NoError(t, err)
	_, err = c.Classification(ctx, " 1 ", "1/2", "a b")
	require.NoError(t, err)
	_, err = c.BankAccounts(ctx, "5317878&x=1")
	require.NoError(t, err)

	_, err = c.Classification(ctx, "1", " ")
	require.ErrorIs(t, err, client.ErrBadSegment)
	cl, _ := client.ClassOf(err)
	require.Equal(t, client.NotSent, cl)
	_, err = c.Classification(ctx, "1", "2", "3", "4", "5", "6", "7")
	require.ErrorIs(t, err, client.ErrBadSegment)

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []seen{
		{"/pos/rest/send?", "pos", ""},
		{"/public/api/info/check/barcode/v2/1/1%2F2/a%20b?", "", "pub"},
		{"/pos/rest/bankAccounts?tin=5317878%26x%3D1", "pos", ""},
	}, reqs, "bad segments never reach the server")
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	cases := map[string]client.Config{
		"no base":           {},
		"bad scheme":        {BaseURL: "ftp://x"},
		"query in base":     {BaseURL: "http://x/?a=1"},
		"bad lookup":        {BaseURL: "http://x", LookupBaseURL: "x"},
		"relative path":     {BaseURL: "http://x", Paths: map[client.Op]string{client.OpInfo: "rest/info"}},
		"unknown operation": {BaseURL: "http://x", Paths: map[client.Op]string{"nope": "/x"}},
		"bad proxy":         {BaseURL: "http://x", Proxy: "::"},
		"missing CA file":   {BaseURL: "http://x", CAFile: "/nonexistent/ca.pem"},
		"negative max":      {BaseURL: "http://x", MaxAnswer: -1},
		"max too large":     {BaseURL: "http://x", MaxAnswer: client.MaxMaxAnswer + 1},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := client.New(cfg)
			require.Error(t, err)
		})
	}
	c, err := client.New(client.Config{BaseURL: "http://127.0.0.1:1"})
	require.NoError(t, err)
	_, err = c.BranchInfo(context.Background())
	require.ErrorIs(t, err, client.ErrNotConfigured)
	_, err = c.Get(context.Background(), client.OpCreateReceipt, nil)
	require.ErrorIs(t, err, client.ErrBadOp)
}

func TestOpsAndPaths(t *testing.T) {
	t.Parallel()
	paths := client.DefaultPaths()
	require.Len(t, paths, len(client.Ops()))
	lookups := 0
	for _, op := range client.Ops() {
		require.True(t, strings.HasPrefix(paths[op], "/"), op)
		if op.Lookup() {
			lookups++
			require.True(t, strings.HasPrefix(paths[op], "/api/"), op)
		} else {
			require.True(t, strings.HasPrefix(paths[op], "/rest/"), op)
		}
	}
	require.Equal(t, 7, lookups, "five lookups, the stock QR and the merchant registration")
}

// TestCreatesUseFreshConnections: a create never rides a keep-alive
// connection the upstream may have closed meanwhile; lookups do reuse.
func TestCreatesUseFreshConnections(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	conns := map[string]map[string]bool{}
	base := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		if conns[r.Method] == nil {
			conns[r.Method] = map[string]bool{}
		}
		conns[r.Method][r.RemoteAddr] = true
		mu.Unlock()
		if r.Method == "POST" {
			_, _ = io.WriteString(w, `{"status":"SUCCESS","id":"1"}`)
			return
		}
		_, _ = io.WriteString(w, `{"msg":"","status":200,"data":null}`)
	})
	c, err := client.New(client.Config{BaseURL: base, LookupBaseURL: base})
	require.NoError(t, err)
	ctx := context.Background()
	for range 3 {
		_, err := c.CreateReceipt(ctx, []byte(`{}`))
		require.NoError(t, err)
		_, err = c.MerchantInfo(ctx, "1")
		require.NoError(t, err)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, conns["POST"], 3)
	require.Len(t, conns["GET"], 1)
}

// TestUndecodableLookupAnswers: a 2xx answer a typed call cannot read is a
// Transient *Error carrying the body; an unknown TIN is Rejected.
func TestUndecodableLookupAnswers(t *testing.T) {
	t.Parallel()
	base := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/info/check/getTinInfo" {
			_, _ = io.WriteString(w, `{"msg":"none","status":500,"data":null}`)
			return
		}
		_, _ = io.WriteString(w, `<html>portal</html>`)
	})
	c, err := client.New(client.Config{BaseURL: base, LookupBaseURL: base})
	require.NoError(t, err)
	ctx := context.Background()
	for name, call := range map[string]func() (any, error){
		"info":           func() (any, error) { return c.Info(ctx) },
		"branch info":    func() (any, error) { return c.BranchInfo(ctx) },
		"merchant info":  func() (any, error) { return c.MerchantInfo(ctx, "1") },
		"classification": func() (any, error) { return c.Classification(ctx, "1") },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := call()
			var e *client.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, client.Transient, e.Class)
			require.ErrorIs(t, err, client.ErrDecode)
			require.Equal(t, 200, e.StatusCode)
			require.Equal(t, "<html>portal</html>", string(e.Body))
		})
	}
	tin, err := c.TinInfo(ctx, "x")
	require.Empty(t, tin)
	cl, _ := client.ClassOf(err)
	require.Equal(t, client.Rejected, cl)
	require.ErrorIs(t, err, client.ErrNotFound)
}

// TestMaxAnswerStopsReading: an endless answer is read to MaxAnswer and
// no further, for every kind of operation; nothing of it comes back, a
// GET's failure is Transient and a create's or delete's Ambiguous, and the
// call ends long before the timeout.
func TestMaxAnswerStopsReading(t *testing.T) {
	t.Parallel()
	written := make(chan int64, 8)
	base := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		chunk := []byte(strings.Repeat("x", 32<<10))
		var n int64
		defer func() { written <- n }()
		_, _ = io.WriteString(w, `{"status":"SUCCESS","id":"1","pad":"`)
		for n < 1<<30 { // 1 GiB: far beyond any socket buffer
			k, err := w.Write(chunk)
			n += int64(k)
			if err != nil {
				return
			}
		}
	})
	c, err := client.New(client.Config{BaseURL: base, LookupBaseURL: base, Timeout: time.Minute, MaxAnswer: 64 << 10})
	require.NoError(t, err)
	ctx := context.Background()
	check := func(raw any, err error, want client.Class) {
		t.Helper()
		require.ErrorIs(t, err, client.ErrBodyTooLarge)
		cl, _ := client.ClassOf(err)
		require.Equal(t, want, cl, "%v", err)
		require.Nil(t, raw)
		n := <-written
		require.Less(t, n, int64(64<<20), "the client read on past MaxAnswer")
	}
	raw, err := c.Get(ctx, client.OpSendData, nil)
	check(raw, err, client.Transient)
	rec, err := c.CreateReceipt(ctx, []byte(`{}`))
	check(rec, err, client.Ambiguous)
	draw, err := c.DeleteReceipt(ctx, "1", "")
	check(draw, err, client.Ambiguous)
	_, err = c.BranchInfo(ctx)
	require.ErrorIs(t, err, client.ErrBodyTooLarge)
	<-written
}
