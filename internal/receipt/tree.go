package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
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
	n         *node
	path      string
	key       string // pending key of an object, valid when !expectKey
	expectKey bool
	seen      map[string]struct{}
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
		f.expectKey = true
	}
	f.n.vals = append(f.n.vals, n)
}

// parseTree reads body into a tree without recursion. It refuses invalid
// UTF-8, anything but one JSON object, duplicate keys, nesting deeper than
// MaxDepth and trailing data. Errors are *ValidationError.
func parseTree(body []byte) (*node, error) {
	if !utf8.Valid(body) {
		return nil, bodyError(fmt.Sprintf("invalid UTF-8 at byte %d", firstInvalidUTF8(body)))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*frame
	var root *node
	for root == nil || len(stack) > 0 {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		if root == nil && tok != json.Delim('{') {
			return nil, bodyError("must be a JSON object")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, ok := tok.(string); ok && top != nil && top.expectKey {
			if err := top.setKey(key); err != nil {
				return nil, err
			}
			continue
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '}' || t == ']' {
				stack = stack[:len(stack)-1]
				continue
			}
			f := open(top, t)
			if top == nil {
				root = f.n
			} else {
				top.attach(f.n)
			}
			if len(stack) >= MaxDepth {
				return nil, &ValidationError{Errors: []FieldError{{
					Field: f.path, Problem: "nesting deeper than " + strconv.Itoa(MaxDepth)}}}
			}
			stack = append(stack, f)
		default:
			top.attach(scalar(tok))
		}
	}
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, bodyError("unexpected data after the JSON value")
	}
	return root, nil
}

// open starts a new object or array below parent (nil for the root).
func open(parent *frame, d json.Delim) *frame {
	f := &frame{n: &node{kind: kindArray}}
	if d == '{' {
		f.n.kind = kindObject
		f.expectKey = true
	}
	if parent != nil {
		f.path = parent.childPath()
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
	f.expectKey = false
	return nil
}

func scalar(tok json.Token) *node {
	switch t := tok.(type) {
	case string:
		return &node{kind: kindString, text: t}
	case json.Number:
		return &node{kind: kindNumber, text: string(t)}
	case bool:
		return &node{kind: kindBool, text: strconv.FormatBool(t)}
	default:
		return &node{kind: kindNull}
	}
}

func syntaxError(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return bodyError("empty body; expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return bodyError("invalid JSON: unexpected end of input")
	case errors.As(err, &se):
		return bodyError(fmt.Sprintf("invalid JSON near byte %d: %s", max(se.Offset-1, 0), se.Error()))
	default:
		return bodyError("invalid JSON: " + err.Error())
	}
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
