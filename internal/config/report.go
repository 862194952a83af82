package config

import (
	"fmt"
	"slices"
	"strings"
)

// KeyError is one problem of a configuration: a key's value, an unknown
// key, or (with Key empty) the TOML syntax.
type KeyError struct {
	Key     string // dotted TOML key, e.g. "sync.concurrency"; "" for syntax
	Problem string
	Line    int // line in the file, from 1; 0 when the key is not in it
}

func (e *KeyError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Problem)
	return b.String()
}

// Is makes every KeyError match ErrInvalid.
func (e *KeyError) Is(target error) bool { return target == ErrInvalid }

// Error is every problem of one configuration, in the order of their lines
// (problems of keys the file does not set come last). Load returns it for
// every refusal but a missing file, and errors.As finds each *KeyError.
type Error struct {
	// Source is the file read; "" when only the defaults and the
	// environment were used.
	Source   string
	Problems []*KeyError
}

// Error writes one line naming the source and the count, then each problem
// on a line of its own.
func (e *Error) Error() string {
	src := e.Source
	if src == "" {
		src = "the defaults with the environment"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problem", src, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString(":")
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.Error())
	}
	return b.String()
}

// Is makes an Error match ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the problems, for errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// lineOf is the line of the key a problem names, or else of the key its
// message names (accept.max_wait is refused for the accept.wait the file
// sets), or 0.
func lineOf(ke *KeyError, lines map[string]int) int {
	base, _, _ := strings.Cut(ke.Key, "[")
	if l := lines[base]; l > 0 {
		return l
	}
	line, longest := 0, 0
	for k, l := range lines {
		if len(k) > longest && strings.Contains(ke.Problem, k) {
			line, longest = l, len(k)
		}
	}
	return line
}

// sortByLine orders problems by line, keeping the order of equal lines;
// problems without a line go last.
func sortByLine(problems []*KeyError) {
	slices.SortStableFunc(problems, func(a, b *KeyError) int {
		la, lb := a.Line, b.Line
		if la == 0 {
			la = int(^uint(0) >> 1)
		}
		if lb == 0 {
			lb = int(^uint(0) >> 1)
		}
		return la - lb
	})
}

// knownKeys lists every key a file may set (tables too), dotted, in the
// order of Config's fields. A map's own entries are free names and are not
// listed.
var knownKeys = func() []string {
	keys := make([]string, len(keyFields))
	for i, f := range keyFields {
		keys[i] = f.key
	}
	return keys
}()

// unknownKey is the problem of a key no Config field has, with a guess at
// the key that was meant: one a typing slip away (sync.concurency), or the
// same name in another table (timeout under [sync] for upstream.timeout).
func unknownKey(key string) string {
	if guess := nearKeys(key); len(guess) > 0 {
		return "unknown key; did you mean " + strings.Join(guess, " or ") + "?"
	}
	return "unknown key"
}

func nearKeys(key string) []string {
	name := key[strings.LastIndex(key, ".")+1:]
	// A slip of one character in a short name, two in a longer one.
	best, bestDist := "", max(1, min(2, len(name)/4))+1
	for _, k := range knownKeys {
		if strings.HasPrefix(key, k+".") {
			continue // the key's own table
		}
		if d := editDistance(strings.ToLower(key), k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return []string{best}
	}
	var same []string
	for _, k := range knownKeys {
		if k[strings.LastIndex(k, ".")+1:] == strings.ToLower(name) && len(same) < 3 {
			same = append(same, k)
		}
	}
	return same
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
