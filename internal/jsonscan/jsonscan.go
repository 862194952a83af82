// Package jsonscan reads a valid JSON document's objects and arrays one
// level at a time, and matches an object's keys to field names as
// encoding/json does, without decoding what it does not ask for: the
// client reads the tax service's answers with it, and the sync worker a
// receipt's type. Every function expects valid JSON (json.Valid); what it
// does with anything else is unspecified.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Field returns the index in names of the field the quoted key is
// for, as encoding/json matches a key to a field's name: exactly, else
// with case folded (Unicode simple folding, so "ſtatus" is "status");
// -1 for none.
func Field(key []byte, names []string) int {
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

// Members calls fn with each key (quoted, as written) and value of the
// JSON object obj: valid, from its '{' to its '}', no space around.
func Members(obj []byte, fn func(key, v []byte)) {
	i := SkipSpace(obj, 1)
	for i < len(obj) && obj[i] != '}' {
		kEnd := SkipValue(obj, i)
		key := obj[i:kEnd]
		i = SkipSpace(obj, kEnd) + 1 // the colon
		i = SkipSpace(obj, i)
		vEnd := SkipValue(obj, i)
		fn(key, obj[i:vEnd])
		i = SkipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
}

// Elements calls fn with each element of the JSON array arr: valid,
// from its '[' to its ']', no space around.
func Elements(arr []byte, fn func(v []byte)) {
	i := SkipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := SkipValue(arr, i)
		fn(arr[i:end])
		i = SkipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = SkipSpace(arr, i+1)
		}
	}
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// SkipValue returns the index just after the valid JSON value at i.
func SkipValue(b []byte, i int) int {
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
				j = SkipValue(b, j) - 1
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
