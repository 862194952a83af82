package client_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

func FuzzCleanSegments(f *testing.F) {
	f.Add("1/11/111", 3)
	f.Add(" 1 /\t/x", 2)
	f.Add("a/b/c/d/e/f/g", 7)
	f.Add("../.", 2)
	f.Add("\u00a0/1", 2)
	f.Fuzz(func(t *testing.T, joined string, n int) {
		segs := strings.Split(joined, "/")
		if n >= 0 && n < len(segs) {
			segs = segs[:n]
		}
		out, err := client.CleanSegments(segs)
		if err != nil {
			require.ErrorIs(t, err, client.ErrBadSegment)
			require.Nil(t, out)
			return
		}
		require.LessOrEqual(t, len(out), client.MaxSegments)
		require.Len(t, out, len(segs))
		for i, s := range out {
			require.NotEmpty(t, s)
			require.Equal(t, strings.TrimSpace(segs[i]), s)
			require.NotContains(t, []string{".", ".."}, s)
		}
	})
}

// decoderSeeds are bodies each decoder must survive: live shapes, quirks
// and garbage.
var decoderSeeds = []string{
	`{"msg":"","status":200,"data":5317878}`,
	`{"msg":"","status":"200","data":"5317878"}`,
	`{"msg":"x","status":500,"data":null}`,
	`{"status":200,"data":[{"branchCode":"01","branchName":"A","subBranchCode":"02","subBranchName":"B"}]}`,
	`{"status":200,"data":[{"taxProductCode":"6011100","taxTypeCode":305,"startDate":"2023-01-01 00:00:00","endDate":null}]}`,
	`{"status":200,"data":{"name":"N","vatpayerRegisteredDate":"2013-01-01T00:00:00Z","isGovernment":null}}`,
	`[["1","A"],["8650001","B","2024-01-01 00:00:00"]]`,
	`{"status":"SUCCESS","id":"1","posId":1,"receipts":[{"id":1,"bankAccountId":null}]}`,
	`{"status":"SUCCESS","posId":"","receipts":[{"id":"1","bankAccountId":{"a":1}},"x"]}`,
	`{"status":"ERROR","message":{"text":"x"},"id":[],"date":true,"receipts":{}}`,
	`null`, `[]`, `{}`, `<html>`, `{"status":1e400}`, `{"data":[[[[[]]]]]}`,
}

// fuzzDecoder fuzzes decode with the rules every decoder keeps, then the
// decoder's own (extra).
func fuzzDecoder[T any](f *testing.F, decode func([]byte) (T, error), extra ...func(*testing.T, []byte, T, error)) {
	for _, s := range decoderSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := decode(body)
		if err != nil {
			require.NotEmpty(t, err.Error())
		}
		if !json.Valid(body) {
			require.Error(t, err, "invalid JSON never decodes")
		}
		for _, check := range extra {
			check(t, body, out, err)
		}
	})
}

func FuzzDecodeEnvelope(f *testing.F) { fuzzDecoder(f, client.DecodeEnvelope) }

func FuzzDecodeBranchInfo(f *testing.F) { fuzzDecoder(f, client.DecodeBranchInfo) }

func FuzzDecodeProductTaxCodes(f *testing.F) { fuzzDecoder(f, client.DecodeProductTaxCodes) }

func FuzzDecodeMerchantInfo(f *testing.F) { fuzzDecoder(f, client.DecodeMerchantInfo) }

func FuzzDecodeClassification(f *testing.F) { fuzzDecoder(f, client.DecodeClassification) }

// FuzzDecodeReceipt: beyond fuzzDecoder's rules, any JSON object decodes,
// and a status, id or date that is a JSON string comes out as written,
// whatever the other fields hold.
func FuzzDecodeReceipt(f *testing.F) {
	fuzzDecoder(f, client.DecodeReceipt, func(t *testing.T, body []byte, rec *client.Receipt, err error) {
		var fields map[string]json.RawMessage
		if json.Unmarshal(body, &fields) != nil || fields == nil {
			return
		}
		require.NoError(t, err, "a JSON object always decodes")
		require.Equal(t, body, rec.Body)
		if rec.PosID != "" {
			require.True(t, json.Valid([]byte(rec.PosID)), "PosID %q is a number", rec.PosID)
		}
		var only struct { // each decoded strictly, alone
			Status json.RawMessage `json:"status"`
			ID     json.RawMessage `json:"id"`
			Date   json.RawMessage `json:"date"`
		}
		require.NoError(t, json.Unmarshal(body, &only))
		for raw, got := range map[*json.RawMessage]string{&only.Status: rec.Status, &only.ID: rec.ID, &only.Date: rec.Date} {
			var s string
			if len(*raw) > 0 && (*raw)[0] == '"' && json.Unmarshal(*raw, &s) == nil {
				require.Equal(t, s, got)
			}
		}
	})
}

// FuzzDecodeReceiptAgrees: DecodeReceipt's one-pass scan of a JSON
// object gives what encoding/json's decode gives, field for field, and
// the same error for what is no object: key case, escapes, repeated keys,
// invalid UTF-8, odd types, spaces.
func FuzzDecodeReceiptAgrees(f *testing.F) {
	for _, seed := range []string{
		`{"status":"SUCCESS","id":"123456789012345678901234567890123","date":"2026-11-28 10:00:00","posId":57471409,"message":"",` +
			`"receipts":[{"id":"955276867907480191617121840466482","bankAccountId":0,"items":[{"name":"a"}]}],"lottery":"SN 1","qrData":"9"}`,
		` { "STATUS" : "PAYMENT" , "Id" : 12 , "posid" : "10012345" } `,
		`{"ſtatus":"SUCCESS","st\u0061tus":"ERROR","status":null,"id":true,"date":{"a":[1,"]"]},"message":"a\"b\u00e9\ud800"}`,
		`{"receipts":[1,"x",null,{"id":"1","id":2,"bankAccountID":"b"},{"bankAccountId":[]}],"receipts":{"id":"x"}}`,
		`{"receipts":[{"id":"\u0031"}],"message":"ÿþ","date":"\/"}`,
		`{"a":{"status":"x"},"b":["status"],"status":-1.5e3}`,
		`null`, `[]`, `"x"`, `{`, `{"status":}`, ``, `{}`, `{"status":"SUCCESS"} x`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := client.DecodeReceipt(body)
		want, werr := client.DecodeReceiptJSON(body)
		if werr != nil {
			require.Error(t, err)
			require.Equal(t, werr.Error(), err.Error())
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}

func FuzzDecodeTinInfo(f *testing.F) {
	for _, s := range decoderSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tin, err := client.DecodeTinInfo(body)
		if err == nil {
			require.NotEmpty(t, tin, "a found TIN is never empty")
			require.True(t, json.Valid(body))
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2024-01-02 03:04:05", "2024-01-02T03:04:05+08:00", "2024-01-02", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := client.ParseTime(s)
		if err != nil {
			require.ErrorIs(t, err, client.ErrDecode)
			return
		}
		if utf8.ValidString(s) && len(strings.TrimSpace(s)) == len(client.DateLayout) && !strings.ContainsAny(s, "TZ+") {
			// the usual layout round-trips in UB time
			require.Equal(t, strings.TrimSpace(s), got.In(client.Ulaanbaatar).Format(client.DateLayout))
		}
	})
}

func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []string{"7", "-1", "Thu, 01 Jan 2026 00:01:30 GMT", "999999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := client.ParseRetryAfter(s, now)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, 24*time.Hour)
	})
}
