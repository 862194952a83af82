package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"

	"github.com/BurntSushi/toml"
)

// Redacted is how every set Secret prints, logs and marshals.
const Redacted = "(set)"

// Secret is a configuration value that must not be shown: a token, a
// header value. It prints, logs and marshals as Redacted, or as "" when
// empty, so that "not set" stays visible: every fmt verb (%v, %s, %+v,
// %#v, %q, even a wrong one), String, GoString, MarshalText (so TOML and
// zap's reflection) and MarshalJSON. Reveal is the value itself, for the
// few places where it goes on the wire. The zero value is empty.
//
// It decodes from a TOML or JSON string (UnmarshalTOML refuses a number
// or a boolean: a token is written in quotes). Modelled on Prometheus
// common/config's Secret, but redacted by fmt as well.
type Secret struct {
	// p points at the value, nil when empty. A pointer rather than the
	// string, so that fmt's fallback for a verb it cannot apply, which
	// prints a struct's fields without calling its methods, shows an
	// address and never the value.
	p *string
}

var (
	_ fmt.Formatter            = Secret{}
	_ fmt.GoStringer           = Secret{}
	_ encoding.TextMarshaler   = Secret{}
	_ json.Marshaler           = Secret{}
	_ encoding.TextUnmarshaler = (*Secret)(nil)
)

// NewSecret wraps v; an empty v is the empty Secret.
func NewSecret(v string) Secret {
	if v == "" {
		return Secret{}
	}
	return Secret{p: &v}
}

// Reveal returns the value itself. Call it only where the value is used:
// on the wire (a header sent, a token compared) or to check it.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsSet reports whether s holds a value.
func (s Secret) IsSet() bool { return s.p != nil }

// String is Redacted, or "" for an empty Secret.
func (s Secret) String() string {
	if s.p == nil {
		return ""
	}
	return Redacted
}

// GoString is String, quoted.
func (s Secret) GoString() string { return strconv.Quote(s.String()) }

// Format writes String under every verb and flag, GoString under %#v.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
}

// MarshalText is String: TOML writes a Secret as "(set)" or "".
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON is String as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalText takes text as the value (JSON strings, and any decoder
// of text).
func (s *Secret) UnmarshalText(text []byte) error {
	*s = NewSecret(string(text))
	return nil
}

// UnmarshalTOML takes a TOML string as the value. The toml package would
// otherwise pass a number or a boolean to UnmarshalText as text.
func (s *Secret) UnmarshalTOML(v any) error {
	text, ok := v.(string)
	if !ok {
		return errors.New("must be text in quotes")
	}
	*s = NewSecret(text)
	return nil
}

// RevealAll returns the values of a map of secrets (headers), for the
// request that sends them; nil for nil.
func RevealAll(secrets map[string]Secret) map[string]string {
	if secrets == nil {
		return nil
	}
	out := make(map[string]string, len(secrets))
	for k, v := range secrets {
		out[k] = v.Reveal()
	}
	return out
}

var (
	secretType     = reflect.TypeFor[Secret]()
	secretsMapType = reflect.TypeFor[map[string]Secret]()
)

// FileTOML writes cfg as a file that Load reads back to cfg: every secret
// in clear. It is for a file only receiptd reads (a test harness writing a
// till's own config); what is shown or sent is cfg encoded as it is, every
// Secret "(set)".
func FileTOML(cfg Config) ([]byte, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(revealed(reflect.ValueOf(cfg))); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// revealed is the table v, a struct of keys, as a map of its keys with
// every Secret in clear.
func revealed(v reflect.Value) map[string]any {
	out := make(map[string]any, v.NumField())
	for i := range v.NumField() {
		name, f := tomlName(v.Type().Field(i)), v.Field(i)
		switch {
		case name == "" || name == "-":
		case isTable(f.Type()):
			out[name] = revealed(f)
		case f.Type() == secretType:
			out[name] = f.Interface().(Secret).Reveal()
		case f.Type() == secretsMapType:
			out[name] = RevealAll(f.Interface().(map[string]Secret))
		default:
			out[name] = f.Interface()
		}
	}
	return out
}

// holdsSecret reports whether a value of type t is or holds a Secret: a
// Secret, a map of them, or a table with one below it.
func holdsSecret(t reflect.Type) bool {
	switch {
	case t == secretType:
		return true
	case t.Kind() == reflect.Map || t.Kind() == reflect.Slice:
		return holdsSecret(t.Elem())
	case isTable(t):
		for i := range t.NumField() {
			if holdsSecret(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
