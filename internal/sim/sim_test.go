package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
)

const validReceipt = `{"branchNo":"001","totalAmount":12345.6789012345678901,"merchantTin":"5317878","posNo":"P1",
"type":"B2C_RECEIPT","billIdSuffix":"%s","totalVat":1,"districtCode":"2501",
"receipts":[{"totalAmount":12345.6789012345678901,"taxType":"VAT_ABLE","totalVAT":1,"merchantTin":"5317878","bankAccountNo":"5012345678",
 "items":[{"name":"a","measureUnit":"ш","qty":1,"unitPrice":0.1,"totalAmount":0.1},
          {"name":"b","measureUnit":"ш","qty":1,"unitPrice":12345.5789012345678901,"totalAmount":12345.5789012345678901}]}],
"payments":[{"code":"CASH","status":"PAID","paidAmount":12345.6789012345678901}]}`

func start(t *testing.T, opts sim.Options) *sim.Sim {
	t.Helper()
	s := sim.New(opts)
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func do(t *testing.T, method, url, body string) (int, http.Header, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

func TestCreateReceiptAnswer(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{Seed: 1})
	code, _, body, err := do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, "000001"))
	require.NoError(t, err)
	require.Equal(t, 200, code, string(body))
	var got map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&got))
	require.Equal(t, "SUCCESS", got["status"])
	require.Regexp(t, `^[1-9][0-9]{32}$`, got["id"])
	require.Regexp(t, `^SN [0-9]{8}$`, got["lottery"])
	require.Regexp(t, `^[0-9]{100,}$`, got["qrData"])
	require.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`, got["date"])
	require.NotContains(t, got, "billIdSuffix")
	require.Contains(t, got, "easy")
	require.Contains(t, got, "version")
	require.Contains(t, got, "posId")
	require.Contains(t, got, "totalVat", "unknown request fields are echoed")
	require.Contains(t, string(body), `"totalAmount":12345.6789012345678901`, "numbers echoed as written")
	sub := got["receipts"].([]any)[0].(map[string]any)
	require.Regexp(t, `^[0-9]{33}$`, sub["id"])
	require.Contains(t, sub, "bankAccountId")

	rs := s.Receipts()
	require.Len(t, rs, 1)
	require.Equal(t, got["id"], rs[0].ID)
	require.Equal(t, "000001", rs[0].BillIDSuffix)
	require.Equal(t, "5317878", rs[0].MerchantTin)
	require.Equal(t, "P1", rs[0].PosNo)
	require.Equal(t, got["lottery"], rs[0].Lottery)
	require.JSONEq(t, fmt.Sprintf(validReceipt, "000001"), string(rs[0].Body))
	require.Equal(t, 1, s.Requests(sim.RouteCreateReceipt))
}

func TestCreateReceiptStatuses(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{Seed: 2})
	payment := strings.Replace(fmt.Sprintf(validReceipt, "2"), `"status":"PAID"`, `"status":"PAY"`, 1)
	code, _, body, err := do(t, "POST", s.URL()+"/rest/receipt", payment)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.Contains(t, string(body), `"status":"PAYMENT"`)

	b2b := strings.Replace(fmt.Sprintf(validReceipt, "3"), "B2C_RECEIPT", "B2B_RECEIPT", 1)
	code, _, body, err = do(t, "POST", s.URL()+"/rest/receipt", b2b)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.Contains(t, string(body), `"lottery":""`, "B2B receipts carry no lottery")
}

func TestCreateReceiptInvalid(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	ok := fmt.Sprintf(validReceipt, "9")
	cases := []struct{ name, body, msg string }{
		{"not json", `{`, "not a JSON object"},
		{"trailing data", ok + `{}`, "trailing data"},
		{"missing branchNo", strings.Replace(ok, `"branchNo":"001",`, "", 1), "branchNo: missing"},
		{"number as string", strings.Replace(ok, `"posNo":"P1"`, `"posNo":1`, 1), "posNo: not a string"},
		{"bad type", strings.Replace(ok, "B2C_RECEIPT", "B2X", 1), "type:"},
		{"bad taxType", strings.Replace(ok, "VAT_ABLE", "VAT", 1), "receipts[0].taxType"},
		{"item total", strings.Replace(ok, `"totalAmount":0.1}`, `"totalAmount":0.10000000000000001}`, 1), "receipts[0].totalAmount"},
		{"root total", strings.Replace(ok, `"totalAmount":12345.6789012345678901,"merchantTin"`, `"totalAmount":12345.67890123456789,"merchantTin"`, 1), "totalAmount: 12345.67890123456789"},
		{"missing item name", strings.Replace(ok, `"name":"a",`, "", 1), "receipts[0].items[0].name: missing"},
		{"bad payment", strings.Replace(ok, `"code":"CASH"`, `"code":"GOLD"`, 1), "payments[0].code"},
		{"no district code", strings.Replace(ok, `"districtCode":"2501",`, "", 1), "districtCode: missing"},
		{"bad district code", strings.Replace(ok, `"districtCode":"2501"`, `"districtCode":"25"`, 1), "districtCode:"},
		{"no payments", strings.Replace(ok, `"payments":[{"code":"CASH","status":"PAID","paidAmount":12345.6789012345678901}]`, `"payments":[]`, 1), "payments: not a non-empty array"},
		{"no root VAT", strings.Replace(ok, `"totalVat":1,`, "", 1), "totalVAT: missing"},
		{"no sub-receipt VAT", strings.Replace(ok, `"totalVAT":1,`, "", 1), "receipts[0].totalVAT: missing"},
		{"VAT as string", strings.Replace(ok, `"totalVAT":1,`, `"totalVAT":"1",`, 1), "receipts[0].totalVAT: not a number"},
		{"huge exponent", strings.Replace(ok, `"qty":1,"unitPrice":0.1`, `"qty":1e999999999,"unitPrice":0.1`, 1), "out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body, err := do(t, "POST", s.URL()+"/rest/receipt", tc.body)
			require.NoError(t, err)
			require.Equal(t, 400, code)
			var e struct{ Status, Message string }
			require.NoError(t, json.Unmarshal(body, &e))
			require.Equal(t, "ERROR", e.Status)
			require.Contains(t, e.Message, tc.msg)
		})
	}
	require.Empty(t, s.Receipts())
}

func TestTotalsAreExact(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	// 0.1 + 0.2 != 0.3 in float64; exactly it is.
	body := `{"branchNo":"1","totalAmount":0.3,"merchantTin":"1","posNo":"1","type":"B2C_INVOICE","billIdSuffix":"1",
	 "districtCode":"0102","receipts":[{"totalAmount":0.3,"taxType":"NO_VAT","merchantTin":"1","items":[
	 {"name":"a","measureUnit":"x","qty":1,"unitPrice":0.1,"totalAmount":0.1},
	 {"name":"b","measureUnit":"x","qty":1,"unitPrice":0.2,"totalAmount":2e-1}]}],
	 "payments":[{"code":"CASH","status":"PAID","paidAmount":0.3}]}`
	code, _, resp, err := do(t, "POST", s.URL()+"/rest/receipt", body)
	require.NoError(t, err)
	require.Equal(t, 200, code, string(resp))
}

func TestDeleteReceipt(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	_, _, body, err := do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, "1"))
	require.NoError(t, err)
	var r struct{ ID, Date string }
	require.NoError(t, json.Unmarshal(body, &r))

	del := fmt.Sprintf(`{"id":%q,"date":%q}`, r.ID, r.Date)
	code, _, _, err := do(t, "DELETE", s.URL()+"/rest/receipt", del)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.Equal(t, []string{r.ID}, s.Deleted())

	code, _, body, err = do(t, "DELETE", s.URL()+"/rest/receipt", del)
	require.NoError(t, err)
	require.Equal(t, 400, code, "a receipt is deleted once")
	require.Contains(t, string(body), `"status":"ERROR"`)

	code, _, _, err = do(t, "DELETE", s.URL()+"/rest/receipt", `{"id":"123"}`)
	require.NoError(t, err)
	require.Equal(t, 400, code)
	require.Equal(t, 3, s.Requests(sim.RouteDeleteReceipt))
}

func TestLookups(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	cases := []struct{ name, path, want string }{
		{"branch info", "/api/info/check/getBranchInfo", `"subBranchCode":"02"`},
		{"product tax codes", "/api/receipt/receipt/getProductTaxCode", `"endDate":null`},
		{"merchant", "/api/info/check/getInfo?tin=37900846788", `"isGovernment":null`},
		{"merchant unknown", "/api/info/check/getInfo?tin=1", `"data":null`},
		{"tin as number", "/api/info/check/getTinInfo?regNo=2712345", `"data":5317878`},
		{"tin unknown", "/api/info/check/getTinInfo?regNo=x", `"status":500`},
		{"bank accounts", "/rest/bankAccounts?tin=5317878", `"bankAccountNo":"5012345678"`},
		{"bank accounts unknown", "/rest/bankAccounts?tin=0", `[]`},
		{"info", "/rest/info", `"operatorTIN":"5317878"`},
		{"send data", "/rest/sendData", `"status":"SUCCESS"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body, err := do(t, "GET", s.URL()+tc.path, "")
			require.NoError(t, err)
			require.Equal(t, 200, code)
			require.Contains(t, string(body), tc.want)
		})
	}
}

func TestClassificationTree(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	path := "/api/info/check/barcode/v2"
	for depth := 0; depth <= 6; depth++ {
		code, _, body, err := do(t, "GET", s.URL()+path, "")
		require.NoError(t, err)
		require.Equal(t, 200, code)
		var rows [][]string
		require.NoError(t, json.Unmarshal(body, &rows))
		require.NotEmpty(t, rows, "depth %d", depth)
		if depth == 6 {
			require.Len(t, rows[0], 3, "barcode rows: barcode, name, registered date")
			require.Regexp(t, `^\d{13}$`, rows[0][0])
			break
		}
		require.Len(t, rows[0], 2)
		if depth > 0 {
			require.True(t, strings.HasPrefix(rows[0][0], path[strings.LastIndex(path, "/")+1:]), "codes nest as prefixes")
		}
		path += "/" + rows[len(rows)-1][0]
	}
	code, _, body, err := do(t, "GET", s.URL()+"/api/info/check/barcode/v2/1/21", "")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.JSONEq(t, `[]`, string(body), "a code outside its parent leaves the tree")
	code, _, _, err = do(t, "GET", s.URL()+"/api/info/check/barcode/v2/1/2/3/4/5/6/7", "")
	require.NoError(t, err)
	require.Equal(t, 404, code)
	require.Equal(t, 9, s.Requests(sim.RouteClassification))
}

func TestFaultErrorRate(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	require.NoError(t, s.SetFaults(sim.Faults{ErrorRate: 1}))
	code, h, body, err := do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, "1"))
	require.NoError(t, err)
	require.Equal(t, 503, code)
	require.Equal(t, "1", h.Get("Retry-After"))
	require.Contains(t, string(body), `"status":"ERROR"`)
	code, _, body, err = do(t, "GET", s.URL()+"/api/info/check/getBranchInfo", "")
	require.NoError(t, err)
	require.Equal(t, 503, code)
	require.Contains(t, string(body), `"status":503`)
	require.Empty(t, s.Receipts())
	require.Equal(t, 1, s.Requests(sim.RouteCreateReceipt))
	require.Equal(t, 1, s.Requests(sim.RouteBranchInfo))
}

func TestFaultDropAfterProcessing(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	require.NoError(t, s.SetFaults(sim.Faults{DropRate: 1}))
	_, _, _, err := do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, "1"))
	require.Error(t, err, "no answer")
	rs := s.Receipts()
	require.Len(t, rs, 1, "the receipt was issued all the same")
	require.True(t, rs[0].Dropped)
}

func TestFaultDownAndUp(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	addr := s.Addr()
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	_, _, _, err := do(t, "GET", s.URL()+"/rest/info", "")
	require.Error(t, err)
	var opErr *net.OpError
	require.ErrorAs(t, err, &opErr)
	require.Equal(t, "dial", opErr.Op, "refused at connect, got %v", err)

	require.NoError(t, s.SetFaults(sim.Faults{}))
	require.Equal(t, addr, s.Addr())
	code, _, _, err := do(t, "GET", s.URL()+"/rest/info", "")
	require.NoError(t, err)
	require.Equal(t, 200, code)

	require.NoError(t, s.SetFaults(sim.Faults{Down: true, DownFor: 50 * time.Millisecond}))
	require.Eventually(t, func() bool {
		code, _, _, err := do(t, "GET", s.URL()+"/rest/info", "")
		return err == nil && code == 200
	}, 5*time.Second, 20*time.Millisecond, "DownFor ends the outage")
	require.False(t, s.Faults().Down)
}

// TestDownForWaitsForItsPort: a port another program took during the
// outage keeps the simulator down, and Faults says so, until the port is
// free again; then the outage ends by itself (once, it ended with the
// simulator silently gone and Faults saying it was up).
func TestDownForWaitsForItsPort(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	require.NoError(t, s.SetFaults(sim.Faults{Down: true, DownFor: 100 * time.Millisecond}))
	thief, err := net.Listen("tcp", s.Addr())
	require.NoError(t, err, "the port is free during the outage")
	time.Sleep(400 * time.Millisecond)
	require.True(t, s.Faults().Down, "still down while the port is taken")

	require.NoError(t, thief.Close())
	require.Eventually(t, func() bool {
		code, _, _, err := do(t, "GET", s.URL()+"/rest/info", "")
		return err == nil && code == 200
	}, 5*time.Second, 20*time.Millisecond, "back once the port is free")
	require.False(t, s.Faults().Down)
}

func TestFaultLatency(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	require.NoError(t, s.SetFaults(sim.Faults{Latency: time.Minute}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL()+"/rest/info", nil)
	require.NoError(t, err)
	_, err = http.DefaultClient.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Error(t, s.SetFaults(sim.Faults{ErrorRate: 2}))
	require.Error(t, s.SetFaults(sim.Faults{Latency: -1}))
}

func TestSimAPI(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	code, _, body, err := do(t, "PUT", s.URL()+"/sim/faults", `{"latency":"1ms","errorRate":0.25,"dropRate":0.5}`)
	require.NoError(t, err)
	require.Equal(t, 200, code, string(body))
	require.Equal(t, sim.Faults{Latency: time.Millisecond, ErrorRate: 0.25, DropRate: 0.5}, s.Faults())
	code, _, body, err = do(t, "GET", s.URL()+"/sim/faults", "")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"down":false,"latency":"1ms","errorRate":0.25,"dropRate":0.5}`, string(body))
	code, _, _, err = do(t, "PUT", s.URL()+"/sim/faults", `{"errorRate":7}`)
	require.NoError(t, err)
	require.Equal(t, 400, code)

	require.NoError(t, s.SetFaults(sim.Faults{}))
	_, _, _, err = do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, "1"))
	require.NoError(t, err)
	_, _, body, err = do(t, "GET", s.URL()+"/sim/receipts", "")
	require.NoError(t, err)
	var rs []sim.Issued
	require.NoError(t, json.Unmarshal(body, &rs))
	require.Len(t, rs, 1)
	require.Equal(t, "1", rs[0].BillIDSuffix)

	code, _, _, err = do(t, "POST", s.URL()+"/sim/reset", "")
	require.NoError(t, err)
	require.Equal(t, 204, code)
	require.Empty(t, s.Receipts())
	require.Zero(t, s.Requests(sim.RouteCreateReceipt))

	code, _, body, err = do(t, "PUT", s.URL()+"/sim/faults", `{"down":true,"downFor":"50ms"}`)
	require.NoError(t, err, "the answer comes before the listener closes")
	require.Equal(t, 200, code, string(body))
	require.Eventually(t, func() bool {
		code, _, _, err := do(t, "GET", s.URL()+"/sim/faults", "")
		return err == nil && code == 200
	}, 5*time.Second, 20*time.Millisecond)
}

func TestDeterministicSeed(t *testing.T) {
	t.Parallel()
	ids := func() []string {
		s := sim.New(sim.Options{Seed: 42, Now: func() time.Time { return time.Unix(1700000000, 0) }})
		h := s.Handler()
		var out []string
		for i := range 3 {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/rest/receipt", strings.NewReader(fmt.Sprintf(validReceipt, fmt.Sprint(i))))
			h.ServeHTTP(rec, req)
			out = append(out, rec.Body.String())
		}
		return out
	}
	require.Equal(t, ids(), ids())
	require.Contains(t, ids()[0], `"date":"2023-11-15 06:13:20"`, "UB time, UTC+8")
}

func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{Seed: 7})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _, err := do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, fmt.Sprint(i)))
			if err == nil && code != 200 {
				t.Errorf("status %d", code)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = s.SetFaults(sim.Faults{Latency: time.Millisecond})
	}()
	wg.Wait()
	seen := map[string]bool{}
	for _, r := range s.Receipts() {
		require.False(t, seen[r.ID], "ids are unique")
		seen[r.ID] = true
	}
	require.Len(t, seen, 16)
}

func TestFaultErrorRateShare(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{Seed: 5})
	require.NoError(t, s.SetFaults(sim.Faults{ErrorRate: 0.5}))
	codes := map[int]int{}
	for range 40 {
		code, _, _, err := do(t, "GET", s.URL()+"/rest/info", "")
		require.NoError(t, err)
		codes[code]++
	}
	require.Equal(t, 40, codes[200]+codes[503], "%v", codes)
	require.Greater(t, codes[200], 5, "%v", codes)
	require.Greater(t, codes[503], 5, "%v", codes)
}

func TestHandlerWithoutStartDropsWhenDown(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Options{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	_, _, _, err := do(t, "GET", srv.URL+"/rest/info", "")
	require.Error(t, err, "connection closed unanswered")
	require.NoError(t, s.SetFaults(sim.Faults{}))
	code, _, _, err := do(t, "GET", srv.URL+"/rest/info", "")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.SetFaults(sim.Faults{}), sim.ErrClosed)
}

// TestFaultErrorRateCountsPerRoute: a simulated 5xx is counted under the
// route it hit (the classification subtree included); a path the simulator
// does not serve is not faulted.
func TestFaultErrorRateCountsPerRoute(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	require.NoError(t, s.SetFaults(sim.Faults{ErrorRate: 1}))
	code, _, _, err := do(t, "GET", s.URL()+"/api/info/check/barcode/v2/1/11", "")
	require.NoError(t, err)
	require.Equal(t, 503, code)
	require.Equal(t, 1, s.Requests(sim.RouteClassification))
	code, _, _, err = do(t, "GET", s.URL()+"/nowhere", "")
	require.NoError(t, err)
	require.Equal(t, 404, code)
}

// TestStagingRefusal: the receipt the SDK's integration test shows live
// staging refusing (no payments, no VAT, no district code) is refused; the
// one it shows staging issuing is issued.
func TestStagingRefusal(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	refused := `{"branchNo":"001","totalAmount":1000,"merchantTin":"37900846788","posNo":"001","type":"B2C_RECEIPT",
	 "billIdSuffix":"01","receipts":[{"totalAmount":1000,"taxType":"VAT_ABLE","merchantTin":"37900846788",
	 "items":[{"name":"Bread","barCode":"19059010880001","measureUnit":"senlovesfits","qty":1,"unitPrice":1000,"totalAmount":1000}]}]}`
	code, _, body, err := do(t, "POST", s.URL()+"/rest/receipt", refused)
	require.NoError(t, err)
	require.Equal(t, 400, code, "%s", body)
	require.Contains(t, string(body), `"status":"ERROR"`)
	issued := `{"branchNo":"001","totalAmount":1100,"totalVAT":100,"merchantTin":"37900846788","districtCode":"2501",
	 "posNo":"001","type":"B2C_RECEIPT","billIdSuffix":"01","receipts":[{"totalAmount":1100,"totalVAT":100,
	 "taxType":"VAT_ABLE","merchantTin":"37900846788","items":[{"name":"Bread","barCode":"19059010880001",
	 "barCodeType":"GS1","measureUnit":"senlovesfits","classificationCode":"2349010","qty":1,"unitPrice":1000,
	 "totalAmount":1100,"totalVAT":100}]}],"payments":[{"code":"CASH","status":"PAID","paidAmount":1100}]}`
	code, _, body, err = do(t, "POST", s.URL()+"/rest/receipt", issued)
	require.NoError(t, err)
	require.Equal(t, 200, code, "%s", body)
	require.Len(t, s.Receipts(), 1)
}

// TestFaultRejectNext: the next N creates are refused with the message
// given, nothing issued; then creates are issued again. Set through the
// /sim/ API as `receiptd sim -h` documents it.
func TestFaultRejectNext(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{})
	code, _, body, err := do(t, "PUT", s.URL()+"/sim/faults", `{"rejectNext":2,"rejectMessage":"merchantTin: not registered"}`)
	require.NoError(t, err)
	require.Equal(t, 200, code, "%s", body)
	require.JSONEq(t, `{"down":false,"errorRate":0,"dropRate":0,"rejectNext":2,"rejectMessage":"merchantTin: not registered"}`, string(body))
	for i := range 2 {
		code, _, body, err := do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, fmt.Sprint(i)))
		require.NoError(t, err)
		require.Equal(t, 400, code)
		require.JSONEq(t, `{"status":"ERROR","message":"merchantTin: not registered"}`, string(body))
	}
	require.Empty(t, s.Receipts())
	require.Zero(t, s.Faults().RejectNext)
	code, _, body, err = do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, "3"))
	require.NoError(t, err)
	require.Equal(t, 200, code, "%s", body)

	require.NoError(t, s.SetFaults(sim.Faults{RejectNext: 1}))
	_, _, body, err = do(t, "POST", s.URL()+"/rest/receipt", fmt.Sprintf(validReceipt, "4"))
	require.NoError(t, err)
	require.Contains(t, string(body), sim.DefaultRejectMessage)
	require.Error(t, s.SetFaults(sim.Faults{RejectNext: -1}))
	require.Equal(t, 4, s.Requests(sim.RouteCreateReceipt), "rejected creates are counted")
}
