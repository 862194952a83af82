package config

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// docDecoder overlays a parsed TOML document on a Config one key at a time,
// so that a bad value or an unknown key is reported beside every other one
// instead of hiding them (toml.Decode stops at the first). It also learns
// each key's line, which toml.MetaData keeps to itself.
type docDecoder struct {
	md    toml.MetaData
	lines map[string]int // dotted key -> line
	errs  []*KeyError
}

// decodeDoc overlays data on cfg and returns every problem found, each with
// its line; a syntax error is the only problem when there is one.
func decodeDoc(data []byte, cfg *Config) (lines map[string]int, errs []*KeyError) {
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		return nil, []*KeyError{syntaxError(data, err)}
	}
	d := &docDecoder{md: md, lines: map[string]int{}}
	d.table(top, nil, reflect.ValueOf(cfg).Elem())
	return d.lines, d.errs
}

// syntaxError turns the TOML parser's error into a problem on the line
// where it is. The parser's own line is one too far when the error is at a
// line's end (an unclosed "[sync"), so the line is counted from the byte
// offset: a newline belongs to the line it ends.
func syntaxError(data []byte, err error) *KeyError {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &KeyError{Problem: "syntax error: " + err.Error(), Line: 1}
	}
	start := min(max(pe.Position.Start, 0), len(data))
	line := 1 + strings.Count(string(data[:start]), "\n")
	if start == len(data) && line > 1 && strings.HasSuffix(string(data), "\n") {
		line-- // "unexpected EOF": the last line, not the empty one after it
	}
	return &KeyError{Problem: "syntax error: " + pe.Message, Line: line}
}

// lineProbe fails to decode on purpose: the decoder's error then carries
// the position of the key being decoded.
type lineProbe struct{}

var errLineProbe = errors.New("line probe")

func (lineProbe) UnmarshalTOML(any) error { return errLineProbe }

// line returns the line of the key p was read from, or 0.
func (d *docDecoder) line(p toml.Primitive, key string) int {
	var pe toml.ParseError
	if err := d.md.PrimitiveDecode(p, &lineProbe{}); errors.As(err, &pe) && pe.Position.Line > 0 {
		d.lines[key] = pe.Position.Line
		return pe.Position.Line
	}
	return 0
}

func (d *docDecoder) add(line int, key, format string, args ...any) {
	d.errs = append(d.errs, &KeyError{Key: key, Problem: fmt.Sprintf(format, args...), Line: line})
}

// table decodes the keys of one TOML table into the struct rv.
func (d *docDecoder) table(prims map[string]toml.Primitive, path []string, rv reflect.Value) {
	for _, name := range slices.Sorted(maps.Keys(prims)) {
		p := prims[name]
		i, ok := fieldIndex(rv.Type(), name)
		if !ok {
			key := joinKey(append(slices.Clip(path), name))
			d.add(d.line(p, key), key, "%s", unknownKey(key))
			continue
		}
		// The key as Validate names it, whatever case the file used.
		field := append(slices.Clip(path), tomlName(rv.Type().Field(i)))
		d.value(p, field, d.line(p, joinKey(field)), rv.Field(i))
	}
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// isTable reports whether a field of type t is a TOML table of keys: a
// struct that is not read from text as one value (Duration, Secret).
func isTable(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshaler)
}

// value decodes one key's value into fv, or records why it cannot.
func (d *docDecoder) value(p toml.Primitive, path []string, line int, fv reflect.Value) {
	key := joinKey(path)
	t := fv.Type()
	switch {
	case isTable(t):
		sub, ok := d.subTable(p, key, line, t)
		if ok {
			d.table(sub, path, fv)
		}
	case t.Kind() == reflect.Map:
		sub, ok := d.subTable(p, key, line, t)
		if !ok {
			return
		}
		if fv.IsNil() {
			fv.Set(reflect.MakeMap(t))
		}
		for _, name := range slices.Sorted(maps.Keys(sub)) {
			elemKey := joinKey(append(slices.Clip(path), name))
			elem := reflect.New(t.Elem())
			if err := d.md.PrimitiveDecode(sub[name], elem.Interface()); err != nil {
				d.mismatch(sub[name], elemKey, d.line(sub[name], elemKey), t.Elem(), err)
				continue
			}
			d.line(sub[name], elemKey)
			fv.SetMapIndex(reflect.ValueOf(name), elem.Elem())
		}
	default:
		// A fresh value, so a failed decode leaves the default in place.
		v := reflect.New(t)
		if err := d.md.PrimitiveDecode(p, v.Interface()); err != nil {
			d.mismatch(p, key, line, t, err)
			return
		}
		fv.Set(v.Elem())
	}
}

// subTable reads p as a table of keys. The toml package decodes a value
// that is not a table (accept = 1, [[log]]) into a map as if it were empty,
// so the kind is checked first.
func (d *docDecoder) subTable(p toml.Primitive, key string, line int, t reflect.Type) (map[string]toml.Primitive, bool) {
	var got any
	err := d.md.PrimitiveDecode(p, &got)
	if _, isTable := got.(map[string]any); !isTable || err != nil {
		d.mismatch(p, key, line, t, err)
		return nil, false
	}
	var sub map[string]toml.Primitive
	if err := d.md.PrimitiveDecode(p, &sub); err != nil {
		d.mismatch(p, key, line, t, err)
		return nil, false
	}
	return sub, true
}

// mismatch records a value that does not fit its key, in the file's terms.
func (d *docDecoder) mismatch(p toml.Primitive, key string, line int, want reflect.Type, err error) {
	var got any
	_ = d.md.PrimitiveDecode(p, &got)
	var pe toml.ParseError
	if _, isText := got.(string); isText && errors.As(err, &pe) && pe.Message != "" {
		d.add(line, key, "%s", pe.Message) // the type's own words (Duration)
		return
	}
	if _, isInt := got.(int64); isInt && want.Kind() == reflect.Int {
		d.add(line, key, "%v is too large", got)
		return
	}
	value := describeValue(got)
	if holdsSecret(want) {
		value = describeKind(got) // a token written without its quotes is still the token
	}
	msg := fmt.Sprintf("must be %s, not %s", describeType(want, key), value)
	if s, ok := got.(string); ok && unquotedFits(s, want) {
		msg += " (remove the quotes)"
	}
	d.add(line, key, "%s", msg)
}

var durationType = reflect.TypeFor[Duration]()

// describeType names what a key of Go type t holds, as the file writes it.
func describeType(t reflect.Type, key string) string {
	switch {
	case t == durationType:
		return `a duration in quotes, like "5s" or "24h"`
	case t.Kind() == reflect.String || t == secretType:
		return "text in quotes"
	case t.Kind() == reflect.Int:
		return "a whole number"
	case t.Kind() == reflect.Slice:
		return `a list of text, like ["a", "b"]`
	case t.Kind() == reflect.Map:
		return fmt.Sprintf("a table of text ([%s] with name = \"value\" lines)", key)
	default:
		return fmt.Sprintf("a table ([%s] with its keys below it)", key)
	}
}

// describeValue names a TOML value for a message.
func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return "the text " + strconv.Quote(v)
	case int64:
		return "the number " + strconv.FormatInt(v, 10)
	case float64:
		return "the number " + strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return "a date"
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// describeKind names a TOML value by its kind alone, for a key that holds
// a secret.
func describeKind(v any) string {
	switch v.(type) {
	case string:
		return "text"
	case int64, float64:
		return "a number"
	case bool:
		return "true or false"
	}
	return describeValue(v) // a date, a list, a table: no value in the words
}

// unquotedFits reports whether s, written without its quotes, would have
// been a value of type t (concurrency = "2").
func unquotedFits(s string, t reflect.Type) bool {
	if t.Kind() == reflect.Int {
		_, err := strconv.Atoi(s)
		return err == nil
	}
	return false
}

// fieldIndex finds the field of struct type t whose toml tag is name; like
// the toml package, a tag that differs only in case matches too.
func fieldIndex(t reflect.Type, name string) (int, bool) {
	fold := -1
	for i := range t.NumField() {
		tag := tomlName(t.Field(i))
		if tag == name {
			return i, true
		}
		if fold < 0 && tag != "" && strings.EqualFold(tag, name) {
			fold = i
		}
	}
	return fold, fold >= 0
}

// tomlName is the key a struct field is read from.
func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// joinKey writes a key path dotted, as Validate names keys.
func joinKey(path []string) string {
	return strings.Join(path, ".")
}
