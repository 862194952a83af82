package syncer

import (
	"bytes"
	"encoding/json"
	"strings"
)

// isB2C reports whether a create body is a B2C receipt or invoice: the
// kinds that carry a lottery number. It says what
// json.Unmarshal(body, &struct{ Type string `json:"type"` }) with no error
// and a Type beginning with B2C says (FuzzIsB2C holds them equal), without
// decoding the whole body: each issued receipt is counted by its type, and
// a decode of a typical sale took about as much CPU as its send
// (docs/performance.md). A body whose top-level "type" it cannot read
// plainly (an escape in a key or in the value, a key spelled in another
// case, a second such key, a value that is not a string) goes to
// encoding/json.
func isB2C(body []byte) bool {
	if v, ok := plainType(body); ok {
		return strings.HasPrefix(v, "B2C")
	}
	var r struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &r) == nil && strings.HasPrefix(r.Type, "B2C")
}

// plainType returns the value of a valid JSON object's one top-level key
// "type", when that key and its string value are written without
// escapes and no other top-level key could be read as "type"; ok false
// when it cannot say.
func plainType(body []byte) (v string, ok bool) {
	if !json.Valid(body) {
		return "", false
	}
	s := skipSpace(body)
	if len(s) == 0 || s[0] != '{' {
		return "", false
	}
	s = skipSpace(s[1:])
	found := false
	for len(s) > 0 && s[0] == '"' {
		key, rest, plain := readString(s)
		if !plain {
			return "", false // an escaped key might read as "type"
		}
		s = skipSpace(rest)
		s = skipSpace(s[1:]) // the colon
		switch {
		case string(key) == "type":
			if found || len(s) == 0 || s[0] != '"' {
				return "", false
			}
			val, rest, plain := readString(s)
			if !plain {
				return "", false
			}
			v, found, s = string(val), true, rest
		case bytes.EqualFold(key, []byte("type")):
			return "", false // encoding/json matches keys in any case
		default:
			s = skipValue(s)
		}
		s = skipSpace(s)
		if len(s) > 0 && s[0] == ',' {
			s = skipSpace(s[1:])
		}
	}
	return v, true
}

func skipSpace(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[0] == '\r') {
		s = s[1:]
	}
	return s
}

// readString reads the JSON string at the start of s (valid JSON): its
// text between the quotes, what follows it, and whether it has no escape.
func readString(s []byte) (text, rest []byte, plain bool) {
	plain = true
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			plain = false
			i++
		case '"':
			return s[1:i], s[i+1:], plain
		}
	}
	return nil, nil, false
}

// skipValue returns what follows the JSON value at the start of s (valid
// JSON).
func skipValue(s []byte) []byte {
	depth := 0
	for len(s) > 0 {
		switch s[0] {
		case '"':
			_, s, _ = readString(s)
			if depth == 0 {
				return s
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return s
			}
			depth--
			if depth == 0 {
				return s[1:]
			}
		case ',':
			if depth == 0 {
				return s
			}
		}
		s = s[1:]
	}
	return s
}
