package syncer

import (
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

const forbiddenPage = "<html>\r\n<head><title>403 Forbidden</title></head>\r\n<body>\r\n<center><h1>403 Forbidden</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

func TestRejectMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		code int
		msg  string // what the client decoded
		body string
		want string
	}{
		{"PosAPI", 400, "totalAmount: does not add up", `{"status":"ERROR","message":"totalAmount: does not add up"}`, "totalAmount: does not add up"},
		{"Spring with message", 400, "bill closed", `{"status":400,"message":"bill closed"}`, "bill closed"},
		{"Spring without message", 400, "Bad Request", `{"status":400,"error":"Bad Request","path":"/rest/receipt"}`,
			`HTTP 400 Bad Request: {"status":400,"error":"Bad Request","path":"/rest/receipt"}`},
		{"proxy HTML", 403, "Forbidden", forbiddenPage, "HTTP 403 Forbidden: 403 Forbidden 403 Forbidden nginx"},
		{"empty body", 404, "Not Found", "", "HTTP 404 Not Found"},
		{"blank message", 400, "  ", "plain\ttext\x00with\x1b[31m controls\xff", "HTTP 400 Bad Request: plain text with [31m controls"},
		{"unknown status", 499, "", "x", "HTTP 499: x"},
		{"names lottery", 400, "", `{"status":400,"lottery":"SN 47461258"}`, "HTTP 400 Bad Request: (body not kept: it names fields whose values are never stored)"},
		{"long", 400, "", strings.Repeat("ab ", 100), "HTTP 400 Bad Request: " + strings.Repeat("ab ", 100)[:excerptMax] + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, rejectMessage(tc.code, tc.msg, []byte(tc.body)))
		})
	}
}

// FuzzRejectMessage: the kept message is never empty, the upstream's own
// message is kept verbatim, and an excerpt is short, printable UTF-8 that
// never carries a field that must not be stored.
func FuzzRejectMessage(f *testing.F) {
	f.Add(403, "Forbidden", []byte(forbiddenPage))
	f.Add(400, "", []byte(`{"status":400,"message":"x"}`))
	f.Add(400, "", []byte(`{"qrData":"1","lottery":"SN 1"}`))
	f.Add(400, "", []byte("<a\xff>\x00\u202e\u00a0b</a>"))
	f.Fuzz(func(t *testing.T, code int, msg string, body []byte) {
		got := rejectMessage(code, msg, body)
		require.NotEmpty(t, strings.TrimSpace(got))
		if m := strings.TrimSpace(msg); m != "" && m != http.StatusText(code) {
			require.Equal(t, msg, got)
			return
		}
		require.True(t, utf8.ValidString(got))
		require.LessOrEqual(t, utf8.RuneCountInString(got), len("HTTP -9223372036854775808 Network Authentication Required: ")+excerptMax+1)
		for _, r := range got {
			require.True(t, r == ' ' || unicode.IsPrint(r), "unprintable %q in %q", r, got)
		}
		require.NotContains(t, got, "  ")
		lower := strings.ToLower(got)
		for _, name := range neverKept {
			require.NotContains(t, lower, name)
		}
	})
}

func TestNotFoundAnswer(t *testing.T) {
	t.Parallel()
	const id = "123456789012345678901234567890123"
	for _, tc := range []struct {
		name string
		code int
		msg  string
		want bool
	}{
		{"simulator", 400, "receipt " + id + " not found", true},
		{"capitals", 404, "Receipt NOT FOUND", true},
		{"constant", 400, "RECEIPT_NOT_FOUND", true},
		{"camel case", 400, "receiptNotFound", true},
		{"names the id only", 400, "id " + id + ": not  found", true},
		{"body status ERROR", 200, "receipt not found", true},
		{"bare 404 page", 404, "Not Found", false},
		{"another thing", 400, "merchant not found", false},
		{"another id", 400, "id 42 not found", false},
		{"not a not-found", 400, "receipt " + id + " already confirmed", false},
		{"forbidden", 403, "receipt not found", false},
		{"gone", 410, "receipt not found", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := &client.Error{Op: client.OpDeleteReceipt, Class: client.Rejected, StatusCode: tc.code, Message: tc.msg}
			require.Equal(t, tc.want, notFoundAnswer(ce, id))
		})
	}
}

// FuzzNotFoundAnswer: the match never holds without "found" in the
// message, and (for ASCII, where case mapping is plain) it ignores letter
// case and how the words are separated.
func FuzzNotFoundAnswer(f *testing.F) {
	f.Add(400, "receipt 1 not found", "1")
	f.Add(404, "Not Found", "")
	f.Add(200, "RECEIPT_NOT-FOUND", "x")
	f.Fuzz(func(t *testing.T, code int, msg, id string) {
		match := func(m string) bool {
			return notFoundAnswer(&client.Error{StatusCode: code, Message: m}, id)
		}
		got := match(msg)
		if got {
			require.Contains(t, strings.ToLower(msg), "found")
		}
		ascii := true
		for i := range len(msg) {
			ascii = ascii && msg[i] < utf8.RuneSelf
		}
		bare := func(m string) bool { return strings.TrimSpace(m) == http.StatusText(code) }
		if !ascii || bare(msg) {
			return
		}
		for _, variant := range []string{strings.ToUpper(msg), strings.ReplaceAll(msg, " ", " _-\t")} {
			if !bare(variant) {
				require.Equal(t, got, match(variant), "%q vs %q", msg, variant)
			}
		}
	})
}
