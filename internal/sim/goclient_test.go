package sim_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// The response structs of the published Go client
// github.com/techpartners-asia/ebarimt-pos3-go (structs/pos3.go at
// 11b0479, MIT licence), copied with their enum types as string; the
// receipt's are testkit.GoReceiptResponse. Its
// BankAccountData is left out: it types id as a string and tin as a
// number, the opposite of the live service (the Python SDK's recorded
// staging answer), so that client cannot read any real PosAPI's accounts.
type (
	goInfoResponse struct {
		OperatorName  string  `json:"operatorName"`
		OperatorTin   string  `json:"operatorTIN"`
		PosID         float64 `json:"posId"`
		PosNo         string  `json:"posNo"`
		LeftLotteries int     `json:"leftLotteries"`
		AppInfo       struct {
			ApplicationDir string `json:"applicationDir"`
			CurrentDir     string `json:"currentDir"`
			Database       string `json:"database"`
			DatabaseHost   string `json:"database-host"`
			WorkDir        string `json:"workDir"`
		} `json:"appInfo"`
		Merchants []struct {
			Name      string `json:"name"`
			TIN       string `json:"tin"`
			Customers []struct {
				Name string `json:"name"`
				TIN  string `json:"tin"`
			} `json:"customers"`
		} `json:"merchants"`
	}
	goGetInfoResponse struct {
		Msg    string `json:"msg"`
		Status int    `json:"status"`
		Data   struct {
			Name                   string `json:"name"`
			FreeProject            bool   `json:"freeProject"`
			CityPayer              bool   `json:"cityPayer"`
			VatPayer               bool   `json:"vatPayer"`
			Found                  bool   `json:"found"`
			VatPayerRegisteredDate string `json:"vatpayerRegisteredDate"`
		} `json:"data"`
	}
	goGetTinInfoResponse struct {
		Msg    string `json:"msg"`
		Status int    `json:"status"`
		Data   int    `json:"data"`
	}
	goGetBranchInfoResponse struct {
		Msg    string `json:"msg"`
		Status int    `json:"status"`
		Data   []struct {
			BranchCode    string `json:"branchCode"`
			BranchName    string `json:"branchName"`
			SubBranchCode string `json:"subBranchCode"`
			SubBranchName string `json:"subBranchName"`
		} `json:"data"`
	}
)

// TestGoClientParsesAnswers: the Go client's structs decode the
// simulator's answers (as encoding/json does in that client) and the
// fields a POS prints or branches on are set.
func TestGoClientParsesAnswers(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{Seed: 3})
	get := func(method, path, body string, into any) {
		t.Helper()
		code, _, b, err := do(t, method, s.URL()+path, body)
		require.NoError(t, err)
		require.Equal(t, 200, code, "%s", b)
		require.NoError(t, json.Unmarshal(b, into), "%s", b)
	}
	var rr testkit.GoReceiptResponse
	get("POST", "/rest/receipt", string(sim.SampleReceipt("GO-1", "000001")), &rr)
	require.Equal(t, "SUCCESS", rr.Status)
	require.Len(t, rr.ID, 33)
	require.NotZero(t, rr.PosID)
	require.NotEmpty(t, rr.QrData)
	require.NotEmpty(t, rr.Lottery)
	require.NotEmpty(t, rr.Date)
	require.NotEmpty(t, rr.Version)
	require.Equal(t, 12500.50, rr.TotalAmount)
	require.NotZero(t, rr.TotalVat)
	require.Len(t, rr.Receipts, 1)
	require.Len(t, rr.Receipts[0].ID, 33)
	require.NotEmpty(t, rr.Receipts[0].Items)

	var info goInfoResponse
	get("GET", "/rest/info", "", &info)
	require.NotEmpty(t, info.OperatorName)
	require.NotEmpty(t, info.OperatorTin)
	require.NotZero(t, info.PosID)
	require.NotEmpty(t, info.PosNo)
	require.Positive(t, info.LeftLotteries)
	require.NotEmpty(t, info.AppInfo.Database)
	require.NotEmpty(t, info.AppInfo.DatabaseHost)
	require.NotEmpty(t, info.Merchants)
	require.NotEmpty(t, info.Merchants[0].TIN)
	require.NotEmpty(t, info.Merchants[0].Customers)

	var mi goGetInfoResponse
	get("GET", "/api/info/check/getInfo?tin="+info.Merchants[0].TIN, "", &mi)
	require.Equal(t, 200, mi.Status)
	require.True(t, mi.Data.Found)
	require.NotEmpty(t, mi.Data.Name)

	var ti goGetTinInfoResponse
	get("GET", "/api/info/check/getTinInfo?regNo=2712345", "", &ti)
	require.Equal(t, 200, ti.Status)
	require.Equal(t, 5317878, ti.Data)

	var bi goGetBranchInfoResponse
	get("GET", "/api/info/check/getBranchInfo", "", &bi)
	require.Equal(t, 200, bi.Status)
	require.NotEmpty(t, bi.Data)
	require.NotEmpty(t, bi.Data[0].SubBranchCode)
}
