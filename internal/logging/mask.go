package logging

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"
)

// Redacted replaces the value of a lottery or qrData field in a log line.
const Redacted = "[redacted]"

const (
	maskPrefix = "*****"
	// maskKeep is how many trailing characters MaskTIN keeps, enough for an
	// operator to tell two customers apart on the same screen.
	maskKeep = 3
	// maskMinLen is the shortest value of which MaskTIN keeps anything;
	// shorter values would give away too large a share of the identifier.
	maskMinLen = 7
)

// MaskTIN masks a customer identifier (customerTin, consumerNo) for a log
// line. It keeps the last 3 characters behind a fixed "*****", so neither
// the identifier nor its length can be read back: "12345678901" becomes
// "*****901". A value shorter than 7 characters is masked entirely
// ("*****"); the empty string stays empty. MaskTIN is idempotent.
func MaskTIN(s string) string {
	if s == "" {
		return ""
	}
	n := utf8.RuneCountInString(s)
	if n < maskMinLen {
		return maskPrefix
	}
	r := []rune(s)
	return maskPrefix + string(r[n-maskKeep:])
}

// CustomerTin is a zap field "customerTin" holding v masked with MaskTIN.
func CustomerTin(v string) zap.Field { return zap.String("customerTin", MaskTIN(v)) }

// ConsumerNo is a zap field "consumerNo" holding v masked with MaskTIN.
func ConsumerNo(v string) zap.Field { return zap.String("consumerNo", MaskTIN(v)) }

type keyKind int

const (
	keyPlain  keyKind = iota
	keyMask           // customerTin, consumerNo
	keyRedact         // lottery, qrData
)

// classify tells what to do with a field or JSON key. It ignores case and
// the separators '_', '-' and ' ', and allocates nothing.
func classify(key string) keyKind {
	if len(key) < len("qrdata") || len(key) > 24 {
		return keyPlain
	}
	var buf [24]byte
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '_' || c == '-' || c == ' ':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	switch string(buf[:n]) {
	case "customertin", "consumerno":
		return keyMask
	case "lottery", "qrdata":
		return keyRedact
	}
	return keyPlain
}

// textPattern finds key/value pairs in free text: JSON ("lottery":"SN 1"),
// JSON escaped inside JSON ({\"lottery\":\"SN 1\"}) and key=value or
// key: value. A quoted value runs to its closing quote (escaped or not); an
// unquoted one runs to the next , ; & } ] or line end, which errs on the side
// of redacting too much.
var textPattern = regexp.MustCompile(
	`(?i)(customer[_-]?tin|consumer[_-]?no|lottery|qr[_-]?data)` +
		`(\\?"?\s*[:=]\s*)` +
		`("(?:[^"\\]|\\.)*"|\\"(?:[^"\\]|\\[^"])*\\"|[^,;&}\]\r\n]*)`)

// ScrubText returns s with the values of lottery and qrData pairs redacted
// and those of customerTin and consumerNo masked, wherever they appear as
// JSON or key=value text. Text without any of those key names is returned
// as it is, at the cost of one scan. The logger applies it to every message,
// string field and error; it is exported for other places that show outside
// text to a person.
func ScrubText(s string) string {
	if !mayHoldKey(s) {
		return s
	}
	idx := textPattern.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, m := range idx {
		key, value := s[m[2]:m[3]], s[m[6]:m[7]]
		b.WriteString(s[last:m[6]])
		b.WriteString(replaceValue(classify(key), value))
		last = m[7]
	}
	b.WriteString(s[last:])
	return b.String()
}

// replaceValue keeps the quoting around value (plain or escaped) and
// replaces what is inside.
func replaceValue(kind keyKind, value string) string {
	inner := strings.TrimLeft(value, `\"`)
	lead := value[:len(value)-len(inner)]
	trimmed := strings.TrimRight(inner, `\"`)
	trail := inner[len(trimmed):]
	if kind == keyMask {
		return lead + MaskTIN(strings.TrimSpace(trimmed)) + trail
	}
	return lead + Redacted + trail
}

// mayHoldKey is the cheap test in front of the regular expression: does s
// contain, in any case, "lottery", "qr", "customer" or "consumer"?
func mayHoldKey(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		switch s[i] | 0x20 {
		case 'l':
			if hasPrefixFold(s[i:], "lottery") {
				return true
			}
		case 'q':
			if s[i+1]|0x20 == 'r' {
				return true
			}
		case 'c':
			if hasPrefixFold(s[i:], "customer") || hasPrefixFold(s[i:], "consumer") {
				return true
			}
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
