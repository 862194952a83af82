package receipt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
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
	text string   // string value, or number literal
	keys []string // object keys, aligned with vals
	vals []node   // object values, or array elements
}

// get returns the value of key in an object, or nil.
func (n *node) get(key string) *node {
	for i, k := range n.keys {
		if k == key {
			return &n.vals[i]
		}
	}
	return nil
}

// frame is an open object or array during the token walk. Its node is
// w.open[self], the values read into it so far are w.open[first:].
type frame struct {
	self, first int
	key         string // pending key of an object, set by walker.key
	need        need
	seen        map[string]struct{} // an object's keys, once it has many
	// hashes has bit keyBit(k) set for every key k of the object so far:
	// a key whose bit is clear is no repeat, without a search.
	hashes uint64
}

// walkers keeps walkers, with their blocks, between parses: a receipt's
// tree is garbage the moment its parser returns, and allocating it anew
// for every receipt was most of the parse's allocation.
var walkers = sync.Pool{New: func() any { return new(walker) }}

// getWalker returns a walker from the pool; release it when its tree is
// no longer used.
func getWalker() *walker { return walkers.Get().(*walker) }

// maxPooledBlock bounds the block a walker may keep in the pool, so that
// one very large body does not pin its tree's memory.
const maxPooledBlock = 8 * block

// maxKeptBody is the largest body whose copy a pooled walker's blocks may
// go on referring to until their next parse overwrites them (or the pool
// drops the walker at a collection). Clearing the blocks of every receipt
// cost about 6,000 of the 132,000 instructions a parse took (valgrind
// --tool=callgrind on BenchmarkParseCreate); the copy of a receipt of a
// few KiB, once per processor, is worth less.
const maxKeptBody = 64 << 10

// release returns w to the pool. The tree it read must not be used after.
func (w *walker) release() {
	if cap(w.nodes) > maxPooledBlock || cap(w.open) > maxPooledBlock {
		return
	}
	if len(w.b) > maxKeptBody {
		// Drop the references into the last body, so that the pool does
		// not hold a large one.
		clear(w.nodes)
		clear(w.keys)
		clear(w.open[:cap(w.open)])
		clear(w.openKey[:cap(w.openKey)])
	}
	*w = walker{open: w.open[:0], openKey: w.openKey[:0], nodes: w.nodes[:0], keys: w.keys[:0]}
	walkers.Put(w)
}

// parse reads body into a tree without recursion: one loop over the bytes
// with an explicit stack of open containers, checking the JSON grammar as
// it goes. It refuses invalid UTF-8, anything but one JSON object,
// duplicate keys, nesting deeper than MaxDepth and trailing data. Errors
// are *ValidationError. The tree lives in w's blocks, until w is released.
func (w *walker) parse(body []byte) (*node, error) {
	if !utf8.Valid(body) {
		return nil, bodyError(fmt.Sprintf("invalid UTF-8 at byte %d", firstInvalidUTF8(body)))
	}
	w.b, w.s, w.i, w.spaced = body, string(body), 0, false
	switch w.skipSpace() {
	case '{':
	case eof:
		return nil, bodyError("empty body; expected a JSON object")
	default:
		return nil, bodyError("must be a JSON object")
	}
	w.i++
	var frames [8]frame
	stack := append(frames[:0], w.push(nil, kindObject))
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		c := w.skipSpace()
		if c == eof {
			return nil, bodyError("invalid JSON: unexpected end of input")
		}
		if (c == '}' && f.need == needKeyOrClose) || (c == ']' && f.need == needValueOrClose) ||
			(c == int(w.closer(f)) && f.need == needCommaOrClose) {
			w.i++
			w.close(f)
			stack = stack[:len(stack)-1]
			continue
		}
		var err error
		switch f.need {
		case needCommaOrClose:
			err = w.comma(f)
		case needKeyOrClose, needKey:
			err = w.key(stack)
		default:
			f.need = needCommaOrClose
			switch c {
			case '{':
				w.i++
				stack = append(stack, w.push(f, kindObject))
			case '[':
				w.i++
				stack = append(stack, w.push(f, kindArray))
			default:
				err = w.scalar(f)
			}
			if len(stack) > MaxDepth {
				return nil, &ValidationError{Errors: []FieldError{{
					Field: w.path(stack), Problem: "nesting deeper than " + strconv.Itoa(MaxDepth)}}}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if w.skipSpace() != eof {
		return nil, bodyError("unexpected data after the JSON value")
	}
	return &w.open[0], nil // the root, which its close left there
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

func (w *walker) closer(f *frame) byte {
	if w.open[f.self].kind == kindObject {
		return '}'
	}
	return ']'
}

// walker reads a JSON document in one pass (strings eight bytes at a
// time, the rest byte by byte). The values of the open
// containers wait in open; when a container closes they move, with its
// keys, into the current block of nodes and keys, so that a receipt's
// hundred-odd values take a few allocations instead of one per value and
// one per growing slice.
type walker struct {
	b       []byte
	s       string // b as a string: strings and numbers are slices of it, not copies
	i       int
	open    []node   // the values of the open containers, innermost last
	openKey []string // aligned with open: each value's key in its object
	nodes   []node   // the current block of closed containers' values
	keys    []string // the current block of closed objects' keys
	spaced  bool     // whitespace outside strings was skipped
}

// block is the least number of values (or keys) one allocation holds.
const block = 128

// push adds a new container below f (the root when f is nil) and returns
// its frame.
func (w *walker) push(f *frame, k kind) frame {
	w.add(f, node{kind: k})
	need := needValueOrClose
	if k == kindObject {
		need = needKeyOrClose
	}
	return frame{self: len(w.open) - 1, first: len(w.open), need: need}
}

// add appends a value to f (the root when f is nil).
func (w *walker) add(f *frame, n node) {
	if w.open == nil {
		w.open, w.openKey = make([]node, 0, 32), make([]string, 0, 32)
	}
	key := ""
	if f != nil {
		key = f.key
	}
	w.open = append(w.open, n)
	w.openKey = append(w.openKey, key)
}

// close moves f's values (and keys) out of open into its node.
func (w *walker) close(f *frame) {
	n := &w.open[f.self]
	n.vals = carve(&w.nodes, w.open[f.first:])
	if n.kind == kindObject {
		n.keys = carve(&w.keys, w.openKey[f.first:])
	}
	w.open, w.openKey = w.open[:f.first], w.openKey[:f.first]
}

// carve copies vals into the block *blk, starting a new block when it has
// no room, and returns the copy (nil when vals is empty).
func carve[T any](blk *[]T, vals []T) []T {
	if len(vals) == 0 {
		return nil
	}
	if cap(*blk)-len(*blk) < len(vals) {
		*blk = make([]T, 0, max(block, len(vals)))
	}
	start := len(*blk)
	*blk = append(*blk, vals...)
	return (*blk)[start:len(*blk):len(*blk)]
}

// path is where the innermost container of stack sits, for a problem.
func (w *walker) path(stack []frame) string {
	p := ""
	for i := 1; i < len(stack); i++ {
		parent, self := stack[i-1], stack[i].self
		if w.open[parent.self].kind == kindObject {
			p = keyPath(p, w.openKey[self])
		} else {
			p = indexPath(p, self-parent.first)
		}
	}
	return p
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
			w.spaced = true
		default:
			return int(c)
		}
	}
	return eof
}

func (w *walker) comma(f *frame) error {
	if w.b[w.i] != ',' {
		return w.fail(fmt.Sprintf("',' or '%c'", w.closer(f)))
	}
	w.i++
	if w.open[f.self].kind == kindObject {
		f.need = needKey
	} else {
		f.need = needValue
	}
	return nil
}

// key reads `"name" :` in the object innermost in stack.
func (w *walker) key(stack []frame) error {
	f := &stack[len(stack)-1]
	if w.b[w.i] != '"' {
		return w.fail("a quoted key")
	}
	k, err := w.str()
	if err != nil {
		return err
	}
	if w.seen(f, k) {
		return &ValidationError{Errors: []FieldError{{
			Field: keyPath(w.path(stack), k), Problem: "duplicate key"}}}
	}
	f.key = k
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
	b, i := w.b, w.i+1
	for {
		// To the next byte that ends the string or needs a look, eight
		// bytes at a time: most of a receipt's bytes are in its strings.
		for {
			if i+8 > len(b) {
				for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
					i++
				}
				break
			}
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			w.i = i
			return "", w.fail("'\"'")
		}
		switch b[i] {
		case '"':
			w.i = i + 1
			if !escaped {
				return w.s[start+1 : i], nil
			}
			var s string
			if err := json.Unmarshal(b[start:w.i], &s); err != nil {
				return "", bodyError(fmt.Sprintf("invalid JSON at byte %d: %v", start, err))
			}
			return s, nil
		case '\\':
			escaped = true
			w.i = i
			if err := w.escape(); err != nil {
				return "", err
			}
			i = w.i + 1
		default:
			w.i = i
			return "", w.fail("no control character in a string (escape it)")
		}
	}
}

// Masks for special: one byte, repeated over a word.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special marks the bytes of x (eight bytes of a string, read
// little-endian) that str must stop at: a quote, a backslash or a control
// character. Each test is the "has a zero byte" word trick,
// (v-ones) &^ v & highs, on x^c for a byte c, and on x itself for the
// bytes below 0x20. The lowest bit set is the high bit of the first such
// byte, exactly; a bit above it may be set wrongly by a borrow, which str
// never looks at. Zero: none of the eight.
func special(x uint64) uint64 {
	q := x ^ ('"' * ones)
	bs := x ^ ('\\' * ones)
	return ((q-ones)&^q | (bs-ones)&^bs | (x-0x20*ones)&^x) & highs
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
	switch c := w.b[w.i]; c {
	case '"':
		s, err := w.str()
		if err != nil {
			return err
		}
		w.add(f, node{kind: kindString, text: s})
		return nil
	case 't', 'f', 'n':
		lit := node{kind: kindBool, text: "true"}
		if c == 'f' {
			lit.text = "false"
		} else if c == 'n' {
			lit = node{kind: kindNull, text: "null"}
		}
		if !strings.HasPrefix(w.s[w.i:], lit.text) {
			return w.fail("a value")
		}
		w.i += len(lit.text)
		w.add(f, lit)
		return nil
	}
	start := w.i
	if err := w.number(); err != nil {
		return err
	}
	w.add(f, node{kind: kindNumber, text: w.s[start:w.i]})
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

// seen reports whether f's object already has key, and notes it when not.
func (w *walker) seen(f *frame, key string) bool {
	const linearLimit = 32 // a receipt object has fewer keys: no map
	keys := w.openKey[f.first:]
	if f.seen == nil && len(keys) < linearLimit {
		bit := keyBit(key)
		if f.hashes&bit == 0 {
			f.hashes |= bit
			return false
		}
		for _, k := range keys {
			if k == key {
				return true
			}
		}
		return false
	}
	if f.seen == nil {
		f.seen = make(map[string]struct{}, 2*linearLimit)
		for _, k := range keys {
			f.seen[k] = struct{}{}
		}
	}
	if _, dup := f.seen[key]; dup {
		return true
	}
	f.seen[key] = struct{}{}
	return false
}

// keyBit is one of 64 bits for a key, from its length and its first and
// last bytes: keys of one object mostly differ in one of them.
func keyBit(k string) uint64 {
	h := uint(len(k))
	if len(k) > 0 {
		h = h*31 + uint(k[0])*7 + uint(k[len(k)-1])
	}
	return 1 << (h % 64)
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
