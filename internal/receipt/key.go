package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
)

// DefaultKeyPrefix starts every key made by DefaultKey, so a caller can keep
// client-chosen Idempotency-Key values in a separate namespace.
const DefaultKeyPrefix = "auto:"

// DefaultKey is the idempotency key of a create request that came without an
// Idempotency-Key header: merchantTin, posNo, billIdSuffix and the calendar
// day of now in loc (time.Local when loc is nil). Each part is quoted, so no
// choice of values can make two different tuples give the same key.
func DefaultKey(c *Create, now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.Local
	}
	return DefaultKeyPrefix + strconv.Quote(c.MerchantTin) + "/" + strconv.Quote(c.PosNo) +
		"/" + strconv.Quote(c.BillIDSuffix) + "/" + now.In(loc).Format(time.DateOnly)
}

// Fingerprint is the hex SHA-256 of body with insignificant whitespace
// removed (json.Compact), so a POS that re-sends the same receipt with other
// indentation is recognised as sending the same body. Key order and number
// spelling still count: they change what is forwarded. A body that is not
// valid JSON is hashed as it is.
func Fingerprint(body []byte) string {
	return fingerprint(body, spaceOutsideStrings(body))
}

// fingerprint is Fingerprint of a body whose whitespace outside strings
// is already known (spaced): the parser sees it on its way.
func fingerprint(body []byte, spaced bool) string {
	if !spaced {
		// Already compact (as most POS software sends it): json.Compact
		// would copy it unchanged, and invalid JSON is hashed as it is
		// either way.
		sum := sha256.Sum256(body)
		return hex.EncodeToString(sum[:])
	}
	var buf bytes.Buffer
	buf.Grow(len(body))
	if err := json.Compact(&buf, body); err == nil {
		body = buf.Bytes()
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// spaceOutsideStrings reports whether body has a JSON whitespace byte
// outside its strings, which json.Compact would drop.
func spaceOutsideStrings(body []byte) bool {
	in := false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case in && c == '\\':
			i++ // the escaped byte cannot end the string
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return true
		}
	}
	return false
}
