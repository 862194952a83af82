package syncer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/receiptd/receiptd/internal/sim"
)

// FuzzIsB2C: a receipt's body comes from the POS, or back from a file on
// disk that may be damaged. isB2C says what decoding the body's type with
// encoding/json says, whatever the body.
func FuzzIsB2C(f *testing.F) {
	for _, s := range []string{
		`{"type":"B2C_RECEIPT","totalAmount":1000}`,
		`{"totalAmount":1000,"receipts":[{"items":[{"name":"a\"b","type":"B2C"}]}],"type":"B2B_RECEIPT"}`,
		` { "type" : "B2C_INVOICE" } `,
		`{"Type":"B2C_RECEIPT"}`,
		`{"TYPE":"B2B_RECEIPT","type":"B2C_RECEIPT"}`,
		`{"\u0074ype":"B2C_RECEIPT"}`,
		`{"type":"\u0042\u0032C_RECEIPT"}`,
		`{"type":"B2C_RECEIPT","type":"B2B_RECEIPT"}`,
		`{"type":"B2C_RECEIPT","type":1}`,
		`{"type":null}`,
		`{"type":"B2C"`,
		`["type","B2C"]`,
		`{"a":{"type":"B2C"},"b":[1,{"c":"}"}],"type":"B2C_RECEIPT"}`,
		`{"a":1e5,"b":true,"c":null,"type":"B2C_RECEIPT"}`,
		"{\"type\":\"B2C\xff\"}",
		`{"ſype":"B2C_RECEIPT"}`,
		`{"type":"B2C_RECEIPT","Type":null}`,
		`{"type":"B2B_RECEIPT","TYPE":"B2C_RECEIPT"}`,
		`{"type":"B2C_RECEIPT","tYpe":{"a":1}}`,
		`null`,
		` {"type":"B2C_RECEIPT"} ` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want := isB2CDecoded(body)
		if got := isB2C(body); got != want {
			t.Fatalf("isB2C(%q) = %v, encoding/json says %v", body, got, want)
		}
	})
}

// go test -run '^$' -bench IsB2C -benchmem ./internal/syncer: the type of
// the simulator's sample sale, read by isB2C and by encoding/json.
func BenchmarkIsB2C(b *testing.B) {
	body := sim.SampleReceipt("10001234", "000017")
	b.Run("isB2C", func(b *testing.B) {
		for b.Loop() {
			if !isB2C(body) {
				b.Fatal("the sample is a B2C receipt")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			if !isB2CDecoded(body) {
				b.Fatal("the sample is a B2C receipt")
			}
		}
	})
}

// isB2CDecoded is isB2C by encoding/json, the reference FuzzIsB2C holds
// it to.
func isB2CDecoded(body []byte) bool {
	var r struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &r) == nil && strings.HasPrefix(r.Type, "B2C")
}
