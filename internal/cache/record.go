package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/client"
)

// maxParam bounds a tin or regNo; real ones are a dozen characters.
const maxParam = 64

// lookup is one cacheable question: the operation and its single
// parameter (TIN, regNo, or the classification path).
type lookup struct {
	op    client.Op
	param string   // "" for the global lists and the classification top level
	segs  []string // classification segments, cleaned
	// fwd are the POS's headers forwarded upstream with the fetch (the
	// stock QR's Authorization / X-API-KEY); not part of the key, never
	// stored.
	fwd http.Header
}

// flightKey is key, told apart by the forwarded headers: a fetch made with
// one POS's credentials is not shared with a caller who sent others (a
// refusal of the first would otherwise answer the second).
func (l lookup) flightKey() string {
	if len(l.fwd) == 0 {
		return l.key()
	}
	h := sha256.New()
	for _, name := range forwardedHeaders {
		for _, v := range l.fwd.Values(name) {
			_, _ = fmt.Fprintf(h, "%s:%s\n", name, v)
		}
	}
	return l.key() + "\x00" + string(h.Sum(nil))
}

// key is the lookup's identity in the index and (after the op bucket) in
// bbolt. The op's bucket holds keyPrefix+param, since bbolt keys may not be
// empty.
func (l lookup) key() string { return string(l.op) + "\x00" + l.param }

const keyPrefix = "="

func (l lookup) boltKey() []byte { return []byte(keyPrefix + l.param) }

// query is what is sent with the lookup.
func (l lookup) query() url.Values {
	switch l.op {
	case client.OpMerchantInfo, client.OpBankAccounts:
		return url.Values{"tin": {l.param}}
	case client.OpTinInfo:
		return url.Values{"regNo": {l.param}}
	case client.OpStockQr:
		return url.Values{"stockQr": {l.param}}
	}
	return nil
}

// cachedOps are the kinds the cache keeps, in status-page order.
var cachedOps = []client.Op{
	client.OpBranchInfo, client.OpProductTaxCode, client.OpMerchantInfo, client.OpTinInfo,
	client.OpInfo, client.OpBankAccounts, client.OpClassification, client.OpStockQr,
}

// liveOp reports whether op's answer is PosAPI's live state, asked for on
// every request and served from the cache only when PosAPI fails.
func liveOp(op client.Op) bool { return op == client.OpInfo || op == client.OpBankAccounts }

func cachedOp(op client.Op) bool {
	for _, o := range cachedOps {
		if o == op {
			return true
		}
	}
	return false
}

// paramLookup builds the lookup of a one-parameter kind from the raw query
// value: trimmed, non-empty, at most maxParam bytes, no control characters.
func paramLookup(op client.Op, name string, values []string) (lookup, error) {
	if len(values) != 1 {
		return lookup{}, fmt.Errorf("%s: want exactly one %s parameter, got %d: %w", op, name, len(values), ErrBadRequest)
	}
	v := strings.TrimSpace(values[0])
	if v == "" || len(v) > maxParam || strings.ContainsFunc(v, isControl) {
		return lookup{}, fmt.Errorf("%s: %s must be 1 to %d printable characters: %w", op, name, maxParam, ErrBadRequest)
	}
	return lookup{op: op, param: v}, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// classLookup builds a classification lookup from path segments as they
// arrived (already path-unescaped): client.CleanSegments' rules.
func classLookup(segs []string) (lookup, error) {
	clean, err := client.CleanSegments(segs)
	if err != nil {
		return lookup{}, fmt.Errorf("classification: %w: %w", ErrBadRequest, err)
	}
	esc := make([]string, len(clean))
	for i, s := range clean {
		esc[i] = url.PathEscape(s)
	}
	return lookup{op: client.OpClassification, param: strings.Join(esc, "/"), segs: clean}, nil
}

// lookupFromKey rebuilds a lookup from its op and stored param (New).
func lookupFromKey(op client.Op, param string) (lookup, error) {
	switch op {
	case client.OpMerchantInfo, client.OpBankAccounts:
		return paramLookup(op, "tin", []string{param})
	case client.OpTinInfo:
		return paramLookup(op, "regNo", []string{param})
	case client.OpStockQr:
		return paramLookup(op, "stockQr", []string{param})
	case client.OpClassification:
		if param == "" {
			return lookup{op: op}, nil
		}
		parts := strings.Split(param, "/")
		for i, p := range parts {
			s, err := url.PathUnescape(p)
			if err != nil {
				return lookup{}, fmt.Errorf("classification key %q: %w", param, ErrBadRecord)
			}
			parts[i] = s
		}
		l, err := classLookup(parts)
		if err != nil || l.param != param {
			return lookup{}, fmt.Errorf("classification key %q: %w", param, ErrBadRecord)
		}
		return l, nil
	}
	if param != "" || !cachedOp(op) {
		return lookup{}, fmt.Errorf("%s key %q: %w", op, param, ErrBadRecord)
	}
	return lookup{op: op}, nil
}

// record is one cached upstream answer.
type record struct {
	fetched     time.Time
	status      int
	negative    bool // data null: cached for NegativeTTL
	contentType string
	body        []byte
}

// Record layout: version 1 | fetched unix nanos (8) | status (2) | flags (1)
// | content type length (2) | content type | body.
const (
	recordVersion = 1
	recordHeader  = 1 + 8 + 2 + 1 + 2
	flagNegative  = 1
)

func (r record) encode() []byte {
	b := make([]byte, recordHeader, recordHeader+len(r.contentType)+len(r.body))
	b[0] = recordVersion
	binary.BigEndian.PutUint64(b[1:9], uint64(r.fetched.UnixNano()))
	binary.BigEndian.PutUint16(b[9:11], uint16(r.status))
	if r.negative {
		b[11] = flagNegative
	}
	binary.BigEndian.PutUint16(b[12:14], uint16(len(r.contentType)))
	b = append(b, r.contentType...)
	return append(b, r.body...)
}

// decodeRecord decodes v; the body is copied only when copyBody is set
// (bbolt's bytes are valid only inside the transaction).
func decodeRecord(v []byte, copyBody bool) (record, error) {
	if len(v) < recordHeader || v[0] != recordVersion {
		return record{}, ErrBadRecord
	}
	n := int(binary.BigEndian.Uint16(v[12:14]))
	if len(v) < recordHeader+n || v[11]&^flagNegative != 0 {
		return record{}, ErrBadRecord
	}
	r := record{
		fetched:     time.Unix(0, int64(binary.BigEndian.Uint64(v[1:9]))),
		status:      int(binary.BigEndian.Uint16(v[9:11])),
		negative:    v[11]&flagNegative != 0,
		contentType: string(v[recordHeader : recordHeader+n]),
	}
	if r.status < 200 || r.status > 299 {
		return record{}, ErrBadRecord
	}
	if copyBody {
		r.body = append([]byte(nil), v[recordHeader+n:]...)
	}
	return r, nil
}
