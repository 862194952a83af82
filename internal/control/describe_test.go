package control

import (
	"encoding"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
)

// TestEffectiveTOMLHoldsNoSecret: the effective configuration sent to the
// head office holds no secret's value. Every config.Secret of Config, and
// every map of them, found by walking the type, holds a value of its own;
// none of them is in the TOML, each key shows "(set)" instead, and the
// walk found at least the secrets known today.
func TestEffectiveTOMLHoldsNoSecret(t *testing.T) {
	cfg := config.Default()
	values := map[string]string{} // key -> the value put in it
	fillSecrets(reflect.ValueOf(&cfg).Elem(), "", values)
	require.Subset(t, slices.Collect(maps.Keys(values)), []string{"auth.token", "auth.metrics_token",
		"upstream.headers.Authorization", "upstream.lookup_headers.Authorization",
		"fleet.headers.Authorization", "control.headers.Authorization"})

	body, err := EffectiveTOML(cfg)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, toml.Unmarshal(body, &doc))
	for key, value := range values {
		require.NotContains(t, string(body), value, "the value of %s is in the effective config", key)
		require.Equal(t, config.Redacted, lookup(doc, key), key)
	}
	require.Equal(t, values["auth.token"], cfg.Auth.Token.Reveal(), "the config itself keeps its values")
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// fillSecrets puts a value of its own in every Secret below v, and an
// Authorization header in every map of them, recording each by key.
func fillSecrets(v reflect.Value, prefix string, values map[string]string) {
	for i := range v.NumField() {
		f, ft := v.Field(i), v.Type().Field(i)
		key := prefix + strings.Split(ft.Tag.Get("toml"), ",")[0]
		value := fmt.Sprintf("leak-%d-%s", len(values), strings.ReplaceAll(key, ".", "-"))
		switch {
		case ft.Type == reflect.TypeFor[config.Secret]():
			f.Set(reflect.ValueOf(config.NewSecret(value)))
			values[key] = value
		case ft.Type == reflect.TypeFor[map[string]config.Secret]():
			f.Set(reflect.ValueOf(map[string]config.Secret{"Authorization": config.NewSecret(value)}))
			values[key+".Authorization"] = value
		case ft.Type.Kind() == reflect.Struct && !reflect.PointerTo(ft.Type).Implements(textUnmarshaler):
			fillSecrets(f, key+".", values)
		}
	}
}

// lookup is the value at a dotted key of a decoded TOML document.
func lookup(doc map[string]any, key string) any {
	var v any = doc
	for _, part := range strings.Split(key, ".") {
		table, _ := v.(map[string]any)
		v = table[part]
	}
	return v
}
