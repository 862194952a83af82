package receipt

import (
	"strconv"
	"strings"
)

// MaxProblems bounds how many problems one ValidationError lists; a body
// with more gets a last entry saying so, which keeps error answers small.
const MaxProblems = 100

// BodyField is the Field of problems that concern the body as a whole
// (not JSON, invalid UTF-8, trailing data) rather than one field.
const BodyField = "body"

// FieldError is one problem with one field of a request body.
type FieldError struct {
	// Field is the path of the field, e.g. "receipts[0].items[2].qty",
	// or BodyField for problems with the body as a whole.
	Field string `json:"field"`
	// Problem says what is wrong, for a POS developer: "required",
	// "must be a number", "must be one of ...".
	Problem string `json:"problem"`
}

// ValidationError is returned by ParseCreate and ParseDelete for a body
// that must be refused. It always holds at least one FieldError.
type ValidationError struct {
	Errors []FieldError
}

// Error returns "<field>: <problem>" of the first problem, which is what the
// local API puts in its "message".
func (e *ValidationError) Error() string {
	if len(e.Errors) == 0 {
		return BodyField + ": invalid"
	}
	return e.Errors[0].Field + ": " + e.Errors[0].Problem
}

// problems collects FieldErrors up to MaxProblems.
type problems struct {
	list    []FieldError
	dropped int
}

func (p *problems) add(field, problem string) {
	if len(p.list) >= MaxProblems {
		p.dropped++
		return
	}
	p.list = append(p.list, FieldError{Field: field, Problem: problem})
}

// err returns nil when nothing was added, else a *ValidationError.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	list := p.list
	if p.dropped > 0 {
		list = append(list, FieldError{
			Field:   BodyField,
			Problem: strconv.Itoa(p.dropped) + " more problems not listed",
		})
	}
	return &ValidationError{Errors: list}
}

func bodyError(problem string) error {
	return &ValidationError{Errors: []FieldError{{Field: BodyField, Problem: problem}}}
}

// keyPath appends an object key to a path: "a.b" for identifier-like keys,
// `a["x y"]` for anything else, so every path reads back unambiguously.
func keyPath(parent, key string) string {
	if !isIdent(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		digit := r >= '0' && r <= '9'
		if !letter && !(digit && i > 0) {
			return false
		}
	}
	return true
}

func oneOf(values []string) string {
	return "must be one of " + strings.Join(values, ", ")
}
