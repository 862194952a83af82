package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadOntoLeavesBaseAlone: the file's tables and the environment's
// headers land in the result, never in the caller's base, and no map or
// list of the result is base's own (a section added later included).
func TestLoadOntoLeavesBaseAlone(t *testing.T) {
	t.Parallel()
	base := Default()
	base.Upstream.Headers["X-Base"] = NewSecret("1")
	base.Fleet.Labels["shop"] = "base"
	base.Control.Headers["X-Base"] = NewSecret("1")
	path := filepath.Join(t.TempDir(), "receiptd.toml")
	require.NoError(t, os.WriteFile(path, []byte(`
[upstream.headers]
X-File = "f"
[fleet.labels]
till = "7"
[control.headers]
Authorization = "Bearer file"
`), 0o600))

	cfg, err := loadOnto(base, path, []string{
		EnvControlHeaderPrefix + "X_ENV=e",
		EnvFleetHeaderPrefix + "X_ENV=e",
	})
	require.NoError(t, err)

	require.Equal(t, map[string]string{"X-Base": "1", "X-File": "f"}, RevealAll(cfg.Upstream.Headers))
	require.Equal(t, map[string]string{"shop": "base", "till": "7"}, cfg.Fleet.Labels)
	require.Equal(t, map[string]string{"X-Base": "1", "Authorization": "Bearer file", "X-Env": "e"}, RevealAll(cfg.Control.Headers))
	require.Equal(t, map[string]string{"X-Base": "1"}, RevealAll(base.Upstream.Headers))
	require.Equal(t, map[string]string{"shop": "base"}, base.Fleet.Labels)
	require.Equal(t, map[string]string{"X-Base": "1"}, RevealAll(base.Control.Headers))
	require.Empty(t, base.Fleet.Headers)
	requireNoSharedRefs(t, reflect.ValueOf(base), reflect.ValueOf(cfg), "Config")
}

// requireNoSharedRefs fails when a non-empty map or list of a is b's too.
func requireNoSharedRefs(t *testing.T, a, b reflect.Value, path string) {
	t.Helper()
	for i := range a.NumField() {
		fa, fb := a.Field(i), b.Field(i)
		name := path + "." + a.Type().Field(i).Name
		switch fa.Kind() {
		case reflect.Struct:
			requireNoSharedRefs(t, fa, fb, name)
		case reflect.Map, reflect.Slice:
			if fa.Len() > 0 {
				require.NotEqual(t, fa.Pointer(), fb.Pointer(), "%s is the base's own", name)
			}
		}
	}
}
