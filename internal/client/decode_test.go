package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

// quirkClient serves body for every request, over real HTTP.
func quirkClient(t *testing.T, body string) *client.Client {
	t.Helper()
	base := handlerServer(t, answer(200, nil, body))
	c, err := client.New(client.Config{BaseURL: base, LookupBaseURL: base})
	require.NoError(t, err)
	return c
}

func TestTinInfoQuirks(t *testing.T) {
	cases := []struct {
		name, body, tin string
		err             error
	}{
		{"number", `{"msg":"","status":200,"data":5317878}`, "5317878", nil},
		{"long number", `{"msg":"","status":200,"data":37900846788}`, "37900846788", nil},
		{"string", `{"msg":"","status":"200","data":"5317878"}`, "5317878", nil},
		{"unknown: status 500, data null", `{"msg":"олдсонгүй","status":500,"data":null}`, "", client.ErrNotFound},
		{"no data", `{"status":200}`, "", client.ErrNotFound},
		{"data object", `{"status":200,"data":{}}`, "", client.ErrDecode},
		{"html", `<html>`, "", client.ErrDecode},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tin, err := quirkClient(t, tc.body).TinInfo(context.Background(), "x")
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.tin, tin)
		})
	}
}

func TestMerchantInfoQuirks(t *testing.T) {
	c := quirkClient(t, `{"msg":"","status":200,"data":{"name":"Бат","freeProject":false,"cityPayer":true,
		"vatPayer":false,"found":true,"vatpayerRegisteredDate":null,"isGovernment":null,"newField":[1.5]}}`)
	m, err := c.MerchantInfo(context.Background(), "1")
	require.NoError(t, err)
	require.Equal(t, &client.MerchantInfo{Name: "Бат", CityPayer: true, Found: true}, m)

	m, err = client.DecodeMerchantInfo([]byte(`{"status":200,"data":{"name":"G","vatPayer":true,
		"vatpayerRegisteredDate":"2013-01-01T00:00:00+08:00","isGovernment":true}}`))
	require.NoError(t, err)
	require.True(t, *m.IsGovernment)
	require.Equal(t, time.Date(2012, 12, 31, 16, 0, 0, 0, time.UTC), m.VatpayerRegisteredDate.UTC())

	m, err = client.DecodeMerchantInfo([]byte(`{"msg":"","status":500,"data":null}`))
	require.NoError(t, err)
	require.Nil(t, m)
}

func TestProductTaxCodeQuirks(t *testing.T) {
	c := quirkClient(t, `{"msg":"","status":200,"data":[
		{"taxProductCode":"6011100","taxProductName":"A","taxTypeCode":305,"taxTypeName":"VAT_FREE","startDate":"2023-01-01 00:00:00","endDate":null},
		{"taxProductCode":64111102,"taxProductName":"B","taxTypeCode":447,"taxTypeName":"VAT_ZERO","startDate":"2022-07-01T00:00:00Z","endDate":"2025-12-31 23:59:59"}]}`)
	codes, err := c.ProductTaxCodes(context.Background())
	require.NoError(t, err)
	require.Len(t, codes, 2)
	require.Nil(t, codes[0].EndDate)
	require.Equal(t, time.Date(2022, 12, 31, 16, 0, 0, 0, time.UTC), codes[0].StartDate.UTC(), "UB is UTC+8")
	require.Equal(t, "64111102", codes[1].TaxProductCode)
	require.Equal(t, time.Date(2022, 7, 1, 0, 0, 0, 0, time.UTC), codes[1].StartDate.UTC())
	require.Equal(t, time.Date(2025, 12, 31, 15, 59, 59, 0, time.UTC), codes[1].EndDate.UTC())

	_, err = client.DecodeProductTaxCodes([]byte(`{"status":200,"data":[{"startDate":"31/12/2025"}]}`))
	require.ErrorIs(t, err, client.ErrDecode)
}

func TestEnvelopeStatusIsAnError(t *testing.T) {
	c := quirkClient(t, `{"msg":"дотоод алдаа","status":500,"data":null}`)
	_, err := c.BranchInfo(context.Background())
	require.ErrorIs(t, err, client.ErrEnvelope)
	cl, _ := client.ClassOf(err)
	require.Equal(t, client.Transient, cl)
	require.Contains(t, err.Error(), "дотоод алдаа")
}

func TestClassificationQuirks(t *testing.T) {
	rows, err := quirkClient(t, `[["1","Салбар"],[2,"number code"],["8650001000001","Бараа","2024-01-15 10:00:00"]]`).
		Classification(context.Background(), "1")
	require.NoError(t, err)
	require.Equal(t, [][]string{{"1", "Салбар"}, {"2", "number code"}, {"8650001000001", "Бараа", "2024-01-15 10:00:00"}}, rows)
	rows, err = client.DecodeClassification([]byte(`null`))
	require.NoError(t, err)
	require.Empty(t, rows)
	_, err = client.DecodeClassification([]byte(`{"msg":"x"}`))
	require.ErrorIs(t, err, client.ErrDecode)
}

func TestParseTime(t *testing.T) {
	want := time.Date(2024, 1, 1, 19, 4, 5, 0, time.UTC)
	for _, s := range []string{"2024-01-02 03:04:05", "2024-01-02T03:04:05", "2024-01-02T03:04:05+08:00",
		"2024-01-01T19:04:05Z", "2024-01-02 03:04:05.000", " 2024-01-02 03:04:05 "} {
		got, err := client.ParseTime(s)
		require.NoError(t, err, s)
		require.True(t, want.Equal(got), "%s → %v", s, got)
	}
	for _, s := range []string{"", "02.01.2024", "2024-13-01 00:00:00", "now"} {
		_, err := client.ParseTime(s)
		require.ErrorIs(t, err, client.ErrDecode, s)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 120 ":                         2 * time.Minute,
		"-3":                            0,
		"99999999999999999":             24 * time.Hour,
		"soon":                          0,
		"Thu, 01 Jan 2026 00:01:30 GMT": 90 * time.Second,
		"Wed, 31 Dec 2025 23:00:00 GMT": 0,
	}
	for in, want := range cases {
		require.Equal(t, want, client.ParseRetryAfter(in, now), in)
	}
}

func TestDecodeReceipt(t *testing.T) {
	rec, err := client.DecodeReceipt([]byte(`{"status":"SUCCESS","id":123456789012345678901234567890123,"posId":"10012345",
		"date":"2024-01-02 03:04:05","receipts":[{"id":"1","bankAccountId":1000},{"id":"2","bankAccountId":null}],"lottery":"SN 1"}`))
	require.NoError(t, err)
	require.Equal(t, "123456789012345678901234567890123", rec.ID, "a numeric id keeps all 33 digits")
	require.Equal(t, "10012345", rec.PosID.String())
	require.Equal(t, []client.SubReceipt{{ID: "1", BankAccountID: "1000"}, {ID: "2"}}, rec.SubReceipts)
}

func TestErrorText(t *testing.T) {
	e := &client.Error{Op: client.OpCreateReceipt, Class: client.Rejected, StatusCode: 400, Message: "bad"}
	require.Equal(t, "create_receipt: rejected: HTTP 400: bad", e.Error())
	_, ok := client.ClassOf(context.Canceled)
	require.False(t, ok)
	require.Equal(t, "unknown class 0", client.Class(0).String())
}
