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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	c := quirkClient(t, `{"msg":"дотоод алдаа","status":500,"data":null}`)
	_, err := c.BranchInfo(context.Background())
	require.ErrorIs(t, err, client.ErrEnvelope)
	cl, _ := client.ClassOf(err)
	require.Equal(t, client.Transient, cl)
	require.Contains(t, err.Error(), "дотоод алдаа")
}

func TestClassificationQuirks(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	rec, err := client.DecodeReceipt([]byte(`{"status":"SUCCESS","id":123456789012345678901234567890123,"posId":"10012345",
		"date":"2024-01-02 03:04:05","receipts":[{"id":"1","bankAccountId":1000},{"id":"2","bankAccountId":null}],"lottery":"SN 1"}`))
	require.NoError(t, err)
	require.Equal(t, "123456789012345678901234567890123", rec.ID, "a numeric id keeps all 33 digits")
	require.Equal(t, "10012345", rec.PosID.String())
	require.Equal(t, []client.SubReceipt{{ID: "1", BankAccountID: "1000"}, {ID: "2"}}, rec.SubReceipts)
}

// TestDecodeReceiptOddSideFields: a field of another type than documented
// is left empty (or kept as a string when it can be); the status, id, date
// and sub-receipt ids survive it.
func TestDecodeReceiptOddSideFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		want       client.Receipt
	}{
		{"posId empty string", `{"status":"SUCCESS","id":"1","posId":""}`,
			client.Receipt{Status: "SUCCESS", ID: "1"}},
		{"posId not a number", `{"status":"SUCCESS","posId":"POS-1"}`, client.Receipt{Status: "SUCCESS"}},
		{"posId object", `{"status":"SUCCESS","posId":{"a":1}}`, client.Receipt{Status: "SUCCESS"}},
		{"posId numeric string", `{"status":"SUCCESS","posId":"10012345"}`, client.Receipt{Status: "SUCCESS", PosID: "10012345"}},
		{"bankAccountId object", `{"status":"SUCCESS","date":"2024-01-02 03:04:05","receipts":[{"id":"7","bankAccountId":{"no":"1"}}]}`,
			client.Receipt{Status: "SUCCESS", Date: "2024-01-02 03:04:05", SubReceipts: []client.SubReceipt{{ID: "7"}}}},
		{"bankAccountId bool, id number", `{"status":"PAYMENT","receipts":[{"id":12,"bankAccountId":true}]}`,
			client.Receipt{Status: "PAYMENT", SubReceipts: []client.SubReceipt{{ID: "12"}}}},
		{"receipts not a list", `{"status":"SUCCESS","id":"1","receipts":{"id":"2"}}`, client.Receipt{Status: "SUCCESS", ID: "1"}},
		{"receipt not an object", `{"status":"SUCCESS","receipts":["x",null,{"id":"3"},[1]]}`,
			client.Receipt{Status: "SUCCESS", SubReceipts: []client.SubReceipt{{ID: "3"}}}},
		{"id and date of other types", `{"status":"SUCCESS","id":{"v":1},"date":[2024]}`, client.Receipt{Status: "SUCCESS"}},
		{"message object", `{"status":"ERROR","message":{"text":"bad"}}`, client.Receipt{Status: "ERROR"}},
		{"message number", `{"status":"ERROR","message":42}`, client.Receipt{Status: "ERROR", Message: "42"}},
		{"status object", `{"status":{"v":"SUCCESS"},"id":"1"}`, client.Receipt{ID: "1"}},
		{"null", `null`, client.Receipt{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := client.DecodeReceipt([]byte(tc.body))
			require.NoError(t, err)
			tc.want.Body = []byte(tc.body)
			require.Equal(t, &tc.want, rec)
		})
	}
	for _, body := range []string{`<html>`, `[]`, `"SUCCESS"`, `{"status":"SUCCESS"`} {
		_, err := client.DecodeReceipt([]byte(body))
		require.ErrorIs(t, err, client.ErrDecode, body)
	}
}

// TestCreateOutcomeIgnoresOddSideFields: over real HTTP, a readable status
// and id decide the class whatever the other fields hold; a body without a
// status, or SUCCESS/PAYMENT without a usable id, stays Ambiguous.
func TestCreateOutcomeIgnoresOddSideFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		class      client.Class // 0: no error
	}{
		{"SUCCESS, posId empty", `{"status":"SUCCESS","id":"1","posId":""}`, 0},
		{"SUCCESS, bankAccountId object", `{"status":"SUCCESS","id":"2","receipts":[{"id":"1","bankAccountId":{}}]}`, 0},
		{"SUCCESS, id a number", `{"status":"SUCCESS","id":123456789012345678901234567890123}`, 0},
		{"PAYMENT, everything odd", `{"status":"PAYMENT","id":"1","date":{},"posId":true,"message":[1],"receipts":"x"}`, 0},
		{"SUCCESS, no id", `{"status":"SUCCESS","receipts":[{"id":"1"}]}`, client.Ambiguous},
		{"PAYMENT, id an array", `{"status":"PAYMENT","id":[]}`, client.Ambiguous},
		{"ERROR, message object", `{"status":"ERROR","message":{"text":"bad"},"posId":""}`, client.Rejected},
		{"status missing", `{"id":"1","posId":""}`, client.Ambiguous},
		{"status object", `{"status":{"v":"SUCCESS"}}`, client.Ambiguous},
		{"not JSON", `SUCCESS`, client.Ambiguous},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := quirkClient(t, tc.body).CreateReceipt(context.Background(), []byte(validReceipt))
			require.NotNil(t, rec)
			require.Equal(t, tc.body, string(rec.Body))
			if tc.class == 0 {
				require.NoError(t, err)
				return
			}
			cl, ok := client.ClassOf(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, tc.class, cl, "%v", err)
		})
	}
}

// TestDeleteErrorWithOddMessage: a delete refused with a message of another
// type is still a refusal, not a success.
func TestDeleteErrorWithOddMessage(t *testing.T) {
	t.Parallel()
	_, err := quirkClient(t, `{"status":"ERROR","message":{"text":"confirmed"}}`).
		DeleteReceipt(context.Background(), "1", "")
	cl, _ := client.ClassOf(err)
	require.Equal(t, client.Rejected, cl, "%v", err)
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	e := &client.Error{Op: client.OpCreateReceipt, Class: client.Rejected, StatusCode: 400, Message: "bad"}
	require.Equal(t, "create_receipt: rejected: HTTP 400: bad", e.Error())
	_, ok := client.ClassOf(context.Canceled)
	require.False(t, ok)
	require.Equal(t, "unknown class 0", client.Class(0).String())
}
