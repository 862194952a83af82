package client

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/receiptd/receiptd/internal/jsonscan"
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
	jsonscan.Members(body, func(key, v []byte) {
		switch jsonscan.Field(key, receiptFields) {
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

// The fields scanReceipt and subsOf read, by jsonscan.Field's index.
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
	jsonscan.Elements(v, func(e []byte) {
		if e[0] != '{' {
			return
		}
		var id, bank looseString
		jsonscan.Members(e, func(key, v []byte) {
			switch jsonscan.Field(key, subFields) {
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
