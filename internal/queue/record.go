package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

const (
	compactMarker = 0x00
	compactFormat = 0x01
)

var kinds = []Kind{KindReceipt, KindDelete}

// entryRest holds the fields a new receipt leaves empty.
type entryRest struct {
	Attempts        []Attempt `json:"attempts,omitempty"`
	AttemptsDropped int       `json:"attemptsDropped,omitempty"`
	Outcome         *Outcome  `json:"outcome,omitempty"`
	NextAttemptAt   time.Time `json:"nextAttemptAt,omitzero"`
	DeleteTarget    string    `json:"deleteTarget,omitempty"`
	DeleteID        string    `json:"deleteId,omitempty"`
	DeleteDate      string    `json:"deleteDate,omitempty"`
	Ambiguous       int       `json:"ambiguousAttempts,omitempty"`
}

func (r *entryRest) empty() bool {
	return len(r.Attempts) == 0 && r.AttemptsDropped == 0 && r.Outcome == nil && r.NextAttemptAt.IsZero() &&
		r.DeleteTarget == "" && r.DeleteID == "" && r.DeleteDate == "" && r.Ambiguous == 0
}

// rawHash is a body hash of 64 lowercase hex digits (receipt.Fingerprint's
// form) as its 32 bytes, which decode turns back into the same text; ok is
// false for any other text. Decoded here, not with encoding/hex: it takes
// uppercase digits too, and its result would be a new slice a receipt.
func rawHash(h string) (raw [32]byte, ok bool) {
	if len(h) != 2*len(raw) {
		return raw, false
	}
	for i := range raw {
		hi, lo := lowerHexDigit(h[2*i]), lowerHexDigit(h[2*i+1])
		if hi > 0xf || lo > 0xf {
			return raw, false
		}
		raw[i] = hi<<4 | lo
	}
	return raw, true
}

// lowerHexDigit is c's value as a lowercase hex digit, or 0xff.
func lowerHexDigit(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return 0xff
}

// encode returns e's record, as the entries bucket and the write-ahead log
// hold it.
//
// Schema 3 (compact), what it writes:
//
//	0x00 0x01                 marker and format
//	uvarint seq               the queueId's number
//	kind byte, state byte     indexes into kinds and AllStates
//	acceptedAt, updatedAt     each 0x00 (the zero time), 0x01 and a varint of unix ns, or 0x02 and
//	                          varints of unix seconds and nanoseconds (outside the years ns can hold)
//	hash                      0x01 and 32 bytes (64 lowercase hex digits), or 0x00 and a string
//	string ×4                 idempotency key, merchantTin, posNo, billIdSuffix (uvarint length, bytes)
//	string                    the other fields as JSON (entryRest), empty when all are zero
//	body                      the rest of the record
//
// Schema 2 and before (still read): uvarint length, the entry as JSON
// without its body, the body. A JSON record never starts with 0x00 (its
// length is not 0), so the first byte tells them apart.
//
// Why: the JSON form spent about 360 bytes on field names, timestamps and
// a hex hash for a new receipt; this one about 110, which puts four
// typical receipts in a 4 KiB page instead of three (docs/performance.md).
func encode(e *Entry) ([]byte, error) { return encodeTo(nil, e) }

// encodeTo appends the record of e to dst.
func encodeTo(dst []byte, e *Entry) ([]byte, error) {
	seq, ok := ParseID(e.QueueID)
	ki, si := slices.Index(kinds, e.Kind), slices.Index(AllStates, e.State)
	if !ok || ki < 0 || si < 0 {
		return nil, fmt.Errorf("encode entry %q: bad id, kind %q or state %q", e.QueueID, e.Kind, e.State)
	}
	rest := entryRest{Attempts: e.Attempts, AttemptsDropped: e.AttemptsDropped, Outcome: e.Outcome,
		NextAttemptAt: e.NextAttemptAt, DeleteTarget: e.DeleteTarget, DeleteID: e.DeleteID,
		DeleteDate: e.DeleteDate, Ambiguous: e.Ambiguous}
	var js []byte
	if !rest.empty() {
		var err error
		if js, err = appendRest(make([]byte, 0, 256), &rest); err != nil {
			return nil, fmt.Errorf("encode entry %s: %w", e.QueueID, err)
		}
	}
	buf := make([]byte, 0, len(dst)+64+len(e.IdemKey)+len(e.BodyHash)+len(e.MerchantTin)+
		len(e.PosNo)+len(e.BillIDSuffix)+len(js)+len(e.Body))
	buf = append(append(buf, dst...), compactMarker, compactFormat)
	buf = binary.AppendUvarint(buf, seq)
	buf = append(buf, byte(ki), byte(si))
	buf = appendTime(buf, e.AcceptedAt)
	buf = appendTime(buf, e.UpdatedAt)
	if raw, ok := rawHash(e.BodyHash); ok {
		buf = append(append(buf, 1), raw[:]...)
	} else {
		buf = appendString(append(buf, 0), e.BodyHash)
	}
	for _, f := range []string{e.IdemKey, e.MerchantTin, e.PosNo, e.BillIDSuffix, string(js)} {
		buf = appendString(buf, f)
	}
	return append(buf, e.Body...), nil
}

// Times that unix nanoseconds in an int64 can hold (1678 to 2262).
var minNanoTime, maxNanoTime = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// appendTime appends t as a flag and its value: 0, the zero time; 1, a
// varint of unix ns; 2, varints of unix seconds and of the nanoseconds,
// for a time outside the years unix ns can hold (a damaged clock's).
func appendTime(buf []byte, t time.Time) []byte {
	switch {
	case t.IsZero():
		return append(buf, 0)
	case t.Before(minNanoTime) || t.After(maxNanoTime):
		return binary.AppendVarint(binary.AppendVarint(append(buf, 2), t.Unix()), int64(t.Nanosecond()))
	}
	return binary.AppendVarint(append(buf, 1), t.UnixNano())
}

func (r *reader) time() time.Time {
	switch r.byte() {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, r.varint()).UTC()
	case 2:
		sec, ns := r.varint(), r.varint()
		return time.Unix(sec, ns).UTC()
	}
	r.err = errRecord
	return time.Time{}
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

var errRecord = errors.New("decode entry: damaged record")

// decode copies everything out of v, which bbolt owns.
func decode(v []byte) (Entry, error) {
	if len(v) > 0 && v[0] == compactMarker {
		return decodeCompact(v)
	}
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return Entry{}, fmt.Errorf("decode entry: bad length prefix")
	}
	var e Entry
	if err := json.Unmarshal(v[w:w+int(n)], &e); err != nil {
		return Entry{}, fmt.Errorf("decode entry: %w", err)
	}
	if body := v[w+int(n):]; len(body) > 0 {
		e.Body = bytes.Clone(body)
	}
	if e.Attempts == nil {
		e.Attempts = []Attempt{}
	}
	return e, nil
}

// reader takes a compact record apart; the first error sticks.
type reader struct {
	v   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.v) == 0 {
		r.err = errRecord
		return 0
	}
	b := r.v[0]
	r.v = r.v[1:]
	return b
}

func (r *reader) uvarint() uint64 {
	n, w := binary.Uvarint(r.v)
	if r.err != nil || w <= 0 {
		r.err = errRecord
		return 0
	}
	r.v = r.v[w:]
	return n
}

func (r *reader) varint() int64 {
	n, w := binary.Varint(r.v)
	if r.err != nil || w <= 0 {
		r.err = errRecord
		return 0
	}
	r.v = r.v[w:]
	return n
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.v)) {
		r.err = errRecord
		return nil
	}
	b := r.v[:n]
	r.v = r.v[n:]
	return b
}

func (r *reader) string() string { return string(r.bytes(r.uvarint())) }

func decodeCompact(v []byte) (Entry, error) {
	r := reader{v: v}
	if r.byte() != compactMarker || r.byte() != compactFormat {
		return Entry{}, fmt.Errorf("decode entry: unknown record format")
	}
	var e Entry
	seq := r.uvarint()
	ki, si := int(r.byte()), int(r.byte())
	e.AcceptedAt, e.UpdatedAt = r.time(), r.time()
	if r.err == nil && (ki >= len(kinds) || si >= len(AllStates) || seq == 0) {
		r.err = errRecord
	}
	switch r.byte() {
	case 1:
		e.BodyHash = hex.EncodeToString(r.bytes(32))
	case 0:
		e.BodyHash = r.string()
	default:
		r.err = errRecord
	}
	e.IdemKey, e.MerchantTin, e.PosNo, e.BillIDSuffix = r.string(), r.string(), r.string(), r.string()
	js := r.bytes(r.uvarint())
	if r.err != nil {
		return Entry{}, r.err
	}
	var rest entryRest
	if len(js) > 0 {
		if err := json.Unmarshal(js, &rest); err != nil {
			return Entry{}, fmt.Errorf("decode entry: %w", err)
		}
	}
	e.QueueID, e.Kind, e.State = FormatID(seq), kinds[ki], AllStates[si]
	e.Attempts, e.AttemptsDropped, e.Outcome = rest.Attempts, rest.AttemptsDropped, rest.Outcome
	e.NextAttemptAt, e.Ambiguous = rest.NextAttemptAt, rest.Ambiguous
	e.DeleteTarget, e.DeleteID, e.DeleteDate = rest.DeleteTarget, rest.DeleteID, rest.DeleteDate
	if e.Attempts == nil {
		e.Attempts = []Attempt{}
	}
	if len(r.v) > 0 {
		e.Body = bytes.Clone(r.v)
	}
	return e, nil
}
