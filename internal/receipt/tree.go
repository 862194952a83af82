package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of objects and arrays accepted; the
// top-level object is depth 1.
const MaxDepth = 32

type kind uint8

const (
	kindObject kind = iota + 1
	kindArray
	kindString
	kindNumber
	kindBool
	kindNull
)

// node is one JSON value as read from the body. Objects keep their keys in
// document order; numbers keep their literal text.
type node struct {
	kind kind
	text string // string value, or number literal
	keys []string
	vals []*node // object values aligned with keys, or array elements
}

// get returns the value of key in an object, or nil.
func (n *node) get(key string) *node {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// frame is an open object or array during the token walk.
type frame struct {
	n    *node
	path string
	key  string // pending key of an object, set by setKey
	need need
	seen map[string]struct{}
}

func (f *frame) childPath() string {
	if f.n.kind == kindObject {
		return keyPath(f.path, f.key)
	}
	return indexPath(f.path, len(f.vals()))
}

func (f *frame) vals() []*node { return f.n.vals }

// attach adds a completed or newly opened value to the frame.
func (f *frame) attach(n *node) {
	if f.n.kind == kindObject {
		f.n.keys = append(f.n.keys, f.key)
	}
	f.n.vals = append(f.n.vals, n)
}

// parseTree reads body into a tree without recursion: one loop over the
// bytes with an explicit stack of open containers, checking the JSON grammar
// as it goes. It refuses invalid UTF-8, anything but one JSON object,
// duplicate keys, nesting deeper than MaxDepth and trailing data. Errors
// are *ValidationError.
func parseTree(body []byte) (*node, error) {
	if !utf8.Valid(body) {
		return nil, bodyError(fmt.Sprintf("invalid UTF-8 at byte %d", firstInvalidUTF8(body)))
	}
	w := walker{b: body, s: string(body)}
	switch w.skipSpace() {
	case '{':
	case eof:
		return nil, bodyError("empty body; expected a JSON object")
	default:
		return nil, bodyError("must be a JSON object")
	}
	w.i++
	root := w.newNode(kindObject, "")
	stack := []*frame{{n: root, need: needKeyOrClose}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		c := w.skipSpace()
		if c == eof {
			return nil, bodyError("invalid JSON: unexpected end of input")
		}
		if (c == '}' && f.need == needKeyOrClose) || (c == ']' && f.need == needValueOrClose) ||
			(c == int(f.closer()) && f.need == needCommaOrClose) {
			w.i++
			stack = stack[:len(stack)-1]
			continue
		}
		var err error
		switch f.need {
		case needCommaOrClose:
			err = w.comma(f)
		case needKeyOrClose, needKey:
			err = w.key(f)
		default:
			f.need = needCommaOrClose
			if c != '{' && c != '[' {
				err = w.scalar(f)
				break
			}
			w.i++
			child := w.open(f, byte(c))
			f.attach(child.n)
			if len(stack) >= MaxDepth {
				return nil, &ValidationError{Errors: []FieldError{{
					Field: child.path, Problem: "nesting deeper than " + strconv.Itoa(MaxDepth)}}}
			}
			stack = append(stack, child)
		}
		if err != nil {
			return nil, err
		}
	}
	if w.skipSpace() != eof {
		return nil, bodyError("unexpected data after the JSON value")
	}
	return root, nil
}

// need is what an open container accepts next.
type need uint8

const (
	needKeyOrClose   need = iota + 1 // just after '{'
	needKey                          // after ',' in an object
	needValueOrClose                 // just after '['
	needValue                        // after ':' or after ',' in an array
	needCommaOrClose                 // after a value
)

func (f *frame) closer() byte {
	if f.n.kind == kindObject {
		return '}'
	}
	return ']'
}

// walker reads a JSON document byte by byte.
type walker struct {
	b     []byte
	s     string // b as a string: strings and numbers are slices of it, not copies
	i     int
	nodes []node // the current block of nodes (newNode)
}

// nodeBlock is how many nodes one allocation holds.
const nodeBlock = 32

// newNode returns a node from the walker's current block: a receipt has
// about a hundred values, and one allocation per value was a tenth of the
// parse's time.
func (w *walker) newNode(k kind, text string) *node {
	if len(w.nodes) == cap(w.nodes) {
		w.nodes = make([]node, 0, nodeBlock) // the old block stays where its nodes point
	}
	w.nodes = append(w.nodes, node{kind: k, text: text})
	return &w.nodes[len(w.nodes)-1]
}

func (w *walker) fail(expected string) error {
	if w.i >= len(w.b) {
		return bodyError("invalid JSON: unexpected end of input")
	}
	return bodyError(fmt.Sprintf("invalid JSON at byte %d: expected %s, found %q", w.i, expected, w.b[w.i]))
}

// eof is what skipSpace returns at the end of the input (a NUL byte is
// data, not the end).
const eof = -1

// skipSpace moves past JSON whitespace and returns the next byte, or eof.
func (w *walker) skipSpace() int {
	for w.i < len(w.b) {
		switch c := w.b[w.i]; c {
		case ' ', '\t', '\r', '\n':
			w.i++
		default:
			return int(c)
		}
	}
	return eof
}

func (w *walker) comma(f *frame) error {
	if w.b[w.i] != ',' {
		return w.fail(fmt.Sprintf("',' or '%c'", f.closer()))
	}
	w.i++
	if f.n.kind == kindObject {
		f.need = needKey
	} else {
		f.need = needValue
	}
	return nil
}

// key reads `"name" :` in an object.
func (w *walker) key(f *frame) error {
	if w.b[w.i] != '"' {
		return w.fail("a quoted key")
	}
	k, err := w.str()
	if err != nil {
		return err
	}
	if err := f.setKey(k); err != nil {
		return err
	}
	if w.skipSpace() != ':' {
		return w.fail("':' after the key")
	}
	w.i++
	f.need = needValue
	return nil
}

// str reads the string starting at the current quote.
func (w *walker) str() (string, error) {
	start := w.i
	escaped := false
	for w.i++; w.i < len(w.b) && w.b[w.i] != '"'; w.i++ {
		switch c := w.b[w.i]; {
		case c < 0x20:
			return "", w.fail("no control character in a string (escape it)")
		case c == '\\':
			escaped = true
			if err := w.escape(); err != nil {
				return "", err
			}
		}
	}
	if w.i >= len(w.b) {
		return "", w.fail("'\"'")
	}
	w.i++
	if !escaped {
		return w.s[start+1 : w.i-1], nil
	}
	var s string
	if err := json.Unmarshal(w.b[start:w.i], &s); err != nil {
		return "", bodyError(fmt.Sprintf("invalid JSON at byte %d: %v", start, err))
	}
	return s, nil
}

// escape checks the escape sequence at the current backslash and leaves
// w.i on its last byte.
func (w *walker) escape() error {
	w.i++
	if w.i >= len(w.b) {
		return w.fail("an escape sequence")
	}
	switch w.b[w.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return nil
	case 'u':
		for range 4 {
			w.i++
			if w.i >= len(w.b) || strings.IndexByte("0123456789abcdefABCDEF", w.b[w.i]) < 0 {
				return w.fail("4 hex digits after \\u")
			}
		}
		return nil
	}
	return w.fail(`one of \" \\ \/ \b \f \n \r \t \u`)
}

// scalar reads a string, number, true, false or null into f.
func (w *walker) scalar(f *frame) error {
	rest := w.b[w.i:]
	for _, lit := range []struct {
		text string
		kind kind
	}{{"true", kindBool}, {"false", kindBool}, {"null", kindNull}} {
		if bytes.HasPrefix(rest, []byte(lit.text)) {
			w.i += len(lit.text)
			f.attach(w.newNode(lit.kind, lit.text))
			return nil
		}
	}
	if rest[0] == '"' {
		s, err := w.str()
		if err != nil {
			return err
		}
		f.attach(w.newNode(kindString, s))
		return nil
	}
	start := w.i
	if err := w.number(); err != nil {
		return err
	}
	f.attach(w.newNode(kindNumber, w.s[start:w.i]))
	return nil
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (w *walker) number() error {
	if w.i < len(w.b) && w.b[w.i] == '-' {
		w.i++
	}
	switch {
	case w.i < len(w.b) && w.b[w.i] == '0':
		w.i++
	case !w.digits():
		return w.fail("a value")
	}
	if w.i < len(w.b) && w.b[w.i] == '.' {
		w.i++
		if !w.digits() {
			return w.fail("a digit after '.'")
		}
	}
	if w.i < len(w.b) && (w.b[w.i] == 'e' || w.b[w.i] == 'E') {
		w.i++
		if w.i < len(w.b) && (w.b[w.i] == '+' || w.b[w.i] == '-') {
			w.i++
		}
		if !w.digits() {
			return w.fail("a digit in the exponent")
		}
	}
	return nil
}

// digits reads one or more decimal digits; false when there is none.
func (w *walker) digits() bool {
	start := w.i
	for w.i < len(w.b) && w.b[w.i] >= '0' && w.b[w.i] <= '9' {
		w.i++
	}
	return w.i > start
}

// open starts a new object or array below parent.
func (w *walker) open(parent *frame, c byte) *frame {
	f := &frame{n: w.newNode(kindArray, ""), path: parent.childPath(), need: needValueOrClose}
	if c == '{' {
		f.n.kind = kindObject
		f.need = needKeyOrClose
	}
	return f
}

// setKey records the next key of an object, refusing a duplicate.
func (f *frame) setKey(key string) error {
	const linearLimit = 16
	dup := false
	if f.seen != nil {
		_, dup = f.seen[key]
	} else {
		for _, k := range f.n.keys {
			dup = dup || k == key
		}
	}
	if dup {
		return &ValidationError{Errors: []FieldError{{
			Field: keyPath(f.path, key), Problem: "duplicate key"}}}
	}
	if f.seen == nil && len(f.n.keys) >= linearLimit {
		f.seen = make(map[string]struct{}, 2*linearLimit)
		for _, k := range f.n.keys {
			f.seen[k] = struct{}{}
		}
	}
	if f.seen != nil {
		f.seen[key] = struct{}{}
	}
	f.key = key
	return nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}
