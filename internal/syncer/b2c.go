package syncer

import (
	"bytes"
	"encoding/json"

	"github.com/receiptd/receiptd/internal/jsonscan"
)

// isB2C reports whether a create body is a B2C receipt or invoice: the
// kinds that carry a lottery number. It says what
// json.Unmarshal(body, &struct{ Type string `json:"type"` }) with no error
// and a Type beginning with B2C says (FuzzIsB2C holds them equal), from
// the body's top level only: each issued receipt is counted by its type,
// and decoding a typical sale's whole body took about as much CPU as its
// send (docs/performance.md). As encoding/json, it matches "type" in any
// case and takes the last such key's string; null leaves it as it was,
// and any other value, or a body that is not a JSON object, says no.
func isB2C(body []byte) bool {
	i := jsonscan.SkipSpace(body, 0)
	if i == len(body) || body[i] != '{' || !json.Valid(body) {
		return false // null, or what encoding/json refuses to decode into a struct
	}
	b2c, ok := false, true
	jsonscan.Members(body[i:len(bytes.TrimRight(body, " \t\r\n"))], func(key, v []byte) {
		switch {
		case jsonscan.Field(key, typeField) != 0:
		case v[0] == '"':
			s := v[1 : len(v)-1]
			if bytes.IndexByte(s, '\\') >= 0 {
				var out string
				_ = json.Unmarshal(v, &out) // valid JSON: a string always decodes
				s = []byte(out)
			}
			b2c = bytes.HasPrefix(s, []byte("B2C"))
		case string(v) != "null":
			ok = false // a number, bool, object or array: encoding/json's type error
		}
	})
	return ok && b2c
}

// typeField is the one field isB2C reads.
var typeField = []string{"type"}
