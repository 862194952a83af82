package client

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// scanReceipt is DecodeReceipt's way for a body that is a JSON object
// (json.Valid, checked by the caller): one pass over the top level and
// over the receipts list, instead of encoding/json's decode, which scans
// the list four times over (its own check, looseSubs' two decodes, each
// element's). It gives what decodeReceiptJSON gives, field for field
// (FuzzDecodeReceiptAgrees): keys matched as encoding/json matches them
// (case folded, the last of a repeated key winning), strings unescaped as
// it unescapes them.
func scanReceipt(body []byte) receiptWire {
	var w receiptWire
	eachMember(body, func(key, v []byte) {
		switch fieldOf(key, receiptFields) {
		case 0:
			w.Status = looseOf(v)
		case 1:
			w.ID = looseOf(v)
		case 2:
			w.Date = looseOf(v)
		case 3:
			w.Message = looseOf(v)
		case 4:
			w.PosID = looseOf(v)
		case 5:
			w.Receipts = subsOf(v)
		}
	})
	return w
}

// The fields scanReceipt and subsOf read, by fieldOf's index.
var (
	receiptFields = []string{"status", "id", "date", "message", "posId", "receipts"}
	subFields     = []string{"id", "bankAccountId"}
)

// subsOf is looseSubs' reading of v.
func subsOf(v []byte) looseSubs {
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	var out looseSubs
	eachElement(v, func(e []byte) {
		if e[0] != '{' {
			return
		}
		var id, bank looseString
		eachMember(e, func(key, v []byte) {
			switch fieldOf(key, subFields) {
			case 0:
				id = looseOf(v)
			case 1:
				bank = looseOf(v)
			}
		})
		out = append(out, SubReceipt{ID: string(id), BankAccountID: string(bank)})
	})
	return out
}

// looseOf is looseString's reading of the valid JSON value v: a string
// unescaped, a number as written, anything else empty.
func looseOf(v []byte) looseString {
	switch {
	case len(v) == 0:
	case v[0] == '"':
		s := v[1 : len(v)-1]
		if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
			return looseString(s)
		}
		var out string
		if json.Unmarshal(v, &out) == nil {
			return looseString(out)
		}
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		return looseString(v)
	}
	return ""
}

// fieldOf returns the index in names of the field the quoted key is
// for, as encoding/json matches a key to a field's name: exactly, else
// with case folded (Unicode simple folding, so "ſtatus" is "status");
// -1 for none.
func fieldOf(key []byte, names []string) int {
	k := key[1 : len(key)-1]
	ascii := true
	for _, c := range k {
		if c == '\\' || c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		var s string
		if json.Unmarshal(key, &s) != nil {
			return -1
		}
		for i, name := range names {
			if s == name {
				return i
			}
		}
		for i, name := range names {
			if strings.EqualFold(s, name) {
				return i
			}
		}
		return -1
	}
	for i, name := range names {
		if string(k) == name {
			return i
		}
	}
	for i, name := range names {
		if len(k) == len(name) && bytes.EqualFold(k, []byte(name)) {
			return i
		}
	}
	return -1
}

// eachMember calls fn with each key (quoted, as written) and value of the
// JSON object obj, which must be valid.
func eachMember(obj []byte, fn func(key, v []byte)) {
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] != '}' {
		kEnd := skipValue(obj, i)
		key := obj[i:kEnd]
		i = skipSpace(obj, kEnd) + 1 // the colon
		i = skipSpace(obj, i)
		vEnd := skipValue(obj, i)
		fn(key, obj[i:vEnd])
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
}

// eachElement calls fn with each element of the JSON array arr, which
// must be valid.
func eachElement(arr []byte, fn func(v []byte)) {
	i := skipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		fn(arr[i:end])
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just after the valid JSON value at i.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(b)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipValue(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[j])) {
		j++
	}
	return j
}
