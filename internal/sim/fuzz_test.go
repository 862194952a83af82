package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
)

// FuzzCreateReceipt: whatever arrives, the simulator answers 200 with an
// issued receipt or 400 with an ERROR body, and records only the former.
func FuzzCreateReceipt(f *testing.F) {
	f.Add(fmt.Sprintf(validReceipt, "1"))
	f.Add(`{"branchNo":"1","totalAmount":1e2,"merchantTin":"1","posNo":"1","type":"B2B_RECEIPT","billIdSuffix":"1","districtCode":"0102",
	 "receipts":[{"totalAmount":100,"taxType":"VAT_ZERO","merchantTin":"1","items":[{"name":"a","measureUnit":"x","qty":1,"unitPrice":100,"totalAmount":100.000}]}],
	 "payments":[{"code":"CASH","status":"PAID","paidAmount":100}]}`)
	f.Add(`{"receipts":[1]}`)
	f.Add(`{"totalAmount":1e99999}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		s := sim.New(sim.Options{})
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/rest/receipt", strings.NewReader(body)))
		var resp struct{ Status, Message string }
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp), rec.Body.String())
		switch rec.Code {
		case 200:
			require.Contains(t, []string{"SUCCESS", "PAYMENT"}, resp.Status)
			require.Len(t, s.Receipts(), 1)
		case 400:
			require.Equal(t, "ERROR", resp.Status)
			require.NotEmpty(t, resp.Message)
			require.Empty(t, s.Receipts())
		default:
			t.Fatalf("status %d", rec.Code)
		}
	})
}

// FuzzClassificationPath: any path answers a JSON list of string rows or a
// 4xx, never a panic.
func FuzzClassificationPath(f *testing.F) {
	for _, p := range []string{"", "/1", "/1/11/111/1111/11111/1111101", "/1/2", "/%2F", "/1/2/3/4/5/6/7"} {
		f.Add(p)
	}
	s := sim.New(sim.Options{})
	f.Fuzz(func(t *testing.T, p string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.Path = "/api/info/check/barcode/v2" + p
		req.URL.RawPath = ""
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			require.True(t, rec.Code >= 300 && rec.Code < 500, "status %d", rec.Code)
			return
		}
		var rows [][]string
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &rows))
	})
}

func FuzzFaultsJSON(f *testing.F) {
	f.Add(`{"down":true,"downFor":"30s","latency":"2s","errorRate":0.2,"dropRate":0.1}`)
	f.Add(`{"latency":"-1s"}`)
	f.Add(`{"otherPace":5.5}`)
	f.Add(`{"otherPace":-1}`)
	f.Add(`{"errorRate":"x"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var fl sim.Faults
		if json.Unmarshal([]byte(in), &fl) != nil {
			return
		}
		out, err := json.Marshal(fl)
		require.NoError(t, err)
		var back sim.Faults
		require.NoError(t, json.Unmarshal(out, &back))
		require.Equal(t, fl.Down, back.Down)
		require.Equal(t, fl.ErrorRate, back.ErrorRate)
		require.Equal(t, fl.DropRate, back.DropRate)
		if fl.Latency > 0 {
			require.Equal(t, fl.Latency, back.Latency)
		}
	})
}
