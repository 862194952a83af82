package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// WrapCore returns a core that masks customer identifiers and redacts
// lottery/qrData in the message and in every field (also in fields given to
// With) before c sees them. Wrap each leaf core, not a tee: a tee writes to
// all its cores whatever their levels once the wrapper has accepted an
// entry. Wrapping twice is harmless.
func WrapCore(c zapcore.Core) zapcore.Core {
	if _, ok := c.(scrubCore); ok {
		return c
	}
	return scrubCore{c}
}

type scrubCore struct{ zapcore.Core }

var _ zapcore.Core = scrubCore{}

func (c scrubCore) With(fields []zapcore.Field) zapcore.Core {
	return scrubCore{c.Core.With(scrubFields(fields))}
}

func (c scrubCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c scrubCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	ent.Message = ScrubText(ent.Message)
	return c.Core.Write(ent, scrubFields(fields))
}

// scrubFields copies fields only when one of them changes.
func scrubFields(fields []zapcore.Field) []zapcore.Field {
	var out []zapcore.Field
	for i, f := range fields {
		nf, changed := scrubField(f)
		if !changed {
			continue
		}
		if out == nil {
			out = slices.Clone(fields)
		}
		out[i] = nf
	}
	if out == nil {
		return fields
	}
	return out
}

func scrubField(f zapcore.Field) (zapcore.Field, bool) {
	switch classify(f.Key) {
	case keyRedact:
		if f.Type == zapcore.NamespaceType {
			return f, false
		}
		return zap.String(f.Key, Redacted), true
	case keyMask:
		if f.Type == zapcore.NamespaceType {
			return f, false
		}
		return zap.String(f.Key, maskAny(fieldValue(f))), true
	}
	switch f.Type {
	case zapcore.StringType:
		return scrubString(f.Key, f.String)
	case zapcore.ByteStringType:
		b, _ := f.Interface.([]byte)
		return scrubString(f.Key, string(b))
	case zapcore.ErrorType, zapcore.StringerType:
		s, ok := textOf(f.Interface)
		if !ok {
			return f, false
		}
		return scrubString(f.Key, s)
	case zapcore.ObjectMarshalerType, zapcore.InlineMarshalerType, zapcore.ArrayMarshalerType:
		return scrubMarshaler(f)
	case zapcore.ReflectType:
		v, changed := scrubValue(f.Interface)
		if !changed {
			return f, false
		}
		return zap.Any(f.Key, v), true
	}
	return f, false
}

func scrubString(key, s string) (zapcore.Field, bool) {
	scrubbed := ScrubText(s)
	if scrubbed == s {
		return zapcore.Field{}, false
	}
	return zap.String(key, scrubbed), true
}

// fieldValue renders f the way zap would, into a plain Go value; nil if f
// cannot be rendered (zap then reports the error itself).
func fieldValue(f zapcore.Field) any {
	enc := zapcore.NewMapObjectEncoder()
	f.AddTo(enc)
	return enc.Fields[f.Key]
}

// textOf is err.Error() or s.String(), as zap would render it; false if v
// is neither or panics (zap then reports that itself, as it does for a nil
// pointer receiver).
func textOf(v any) (text string, ok bool) {
	defer func() {
		if recover() != nil {
			text, ok = "", false
		}
	}()
	switch x := v.(type) {
	case error:
		return x.Error(), true
	case fmt.Stringer:
		return x.String(), true
	}
	return "", false
}

// scrubMarshaler renders an object or array field into maps and slices,
// scrubs those, and replaces the field only when something changed.
func scrubMarshaler(f zapcore.Field) (zapcore.Field, bool) {
	enc := zapcore.NewMapObjectEncoder()
	var err error
	switch v := f.Interface.(type) {
	case zapcore.ObjectMarshaler:
		if f.Type == zapcore.InlineMarshalerType {
			err = v.MarshalLogObject(enc)
		} else {
			err = enc.AddObject(f.Key, v)
		}
	case zapcore.ArrayMarshaler:
		err = enc.AddArray(f.Key, v)
	default:
		return f, false
	}
	if err != nil {
		return f, false
	}
	scrubbed, changed := scrubValue(enc.Fields)
	if !changed {
		return f, false
	}
	m, _ := scrubbed.(map[string]any)
	if f.Type == zapcore.InlineMarshalerType {
		return zap.Inline(mapObject(m)), true
	}
	return zap.Any(f.Key, m[f.Key]), true
}

// scrubValue walks maps and slices; other values are rendered to JSON and
// walked only when the JSON holds one of the key names.
func scrubValue(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16,
		uint32, uint64, uintptr, float32, float64, complex64, complex128, json.Number:
		return v, false
	case string:
		s := ScrubText(x)
		return s, s != x
	case []byte:
		s := ScrubText(string(x))
		return s, s != string(x)
	case map[string]any:
		return scrubMap(x)
	case []any:
		return scrubSlice(x)
	}
	return scrubJSON(v)
}

func scrubMap(m map[string]any) (any, bool) {
	var out map[string]any
	for k, val := range m {
		var (
			nv      any
			changed bool
		)
		switch classify(k) {
		case keyRedact:
			nv, changed = Redacted, true
		case keyMask:
			nv, changed = maskAny(val), true
		default:
			nv, changed = scrubValue(val)
		}
		if changed {
			if out == nil {
				out = maps.Clone(m)
			}
			out[k] = nv
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}

func scrubSlice(s []any) (any, bool) {
	var out []any
	for i, val := range s {
		nv, changed := scrubValue(val)
		if changed {
			if out == nil {
				out = slices.Clone(s)
			}
			out[i] = nv
		}
	}
	if out == nil {
		return s, false
	}
	return out, true
}

func scrubJSON(v any) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil || !mayHoldKey(string(b)) {
		return v, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return v, false
	}
	scrubbed, changed := scrubValue(generic)
	if !changed {
		return v, false
	}
	return scrubbed, true
}

// maskAny masks a scalar identifier; anything else is masked entirely.
func maskAny(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return MaskTIN(x)
	case json.Number:
		return MaskTIN(x.String())
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return MaskTIN(fmt.Sprint(x))
	}
	return maskPrefix
}

// mapObject logs a scrubbed map as an object, keys in sorted order.
type mapObject map[string]any

func (m mapObject) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := enc.AddReflected(k, m[k]); err != nil {
			return fmt.Errorf("log field %s: %w", k, err)
		}
	}
	return nil
}
