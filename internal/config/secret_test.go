package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const leak = "hunter2-hunter2-hunter2"

// TestSecretNeverShowsItsValue: every way of printing, logging or
// marshalling a Secret, alone or inside the whole Config, shows "(set)";
// only Reveal gives the value.
func TestSecretNeverShowsItsValue(t *testing.T) {
	t.Parallel()
	s := NewSecret(leak)
	require.Equal(t, leak, s.Reveal())
	require.True(t, s.IsSet())
	require.Equal(t, Redacted, s.String())
	require.Equal(t, `"(set)"`, s.GoString())
	for verb, want := range map[string]string{
		"%v": Redacted, "%s": Redacted, "%+v": Redacted, "%#v": `"(set)"`, "%q": `"(set)"`,
		"%10s": "     (set)", "%x": "2873657429", "%d": "%!d(string=(set))", "%p": "",
	} {
		got := fmt.Sprintf(verb, s)
		require.NotContains(t, got, "hunter2", verb)
		if want != "" {
			require.Equal(t, want, got, verb)
		}
	}
	text, err := s.MarshalText()
	require.NoError(t, err)
	require.Equal(t, Redacted, string(text))

	cfg := withEverySecret(t, leak)
	for _, shown := range shownForms(t, cfg) {
		require.NotContains(t, shown, "hunter2")
		require.Contains(t, shown, Redacted)
	}
}

// shownForms is cfg as fmt, JSON, TOML and zap write it.
func shownForms(t *testing.T, cfg Config) []string {
	t.Helper()
	js, err := json.Marshal(cfg)
	require.NoError(t, err)
	var tm bytes.Buffer
	require.NoError(t, toml.NewEncoder(&tm).Encode(cfg))
	var logged bytes.Buffer
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logged), zap.DebugLevel))
	log.Info("config", zap.Any("cfg", cfg), zap.Any("token", cfg.Auth.Token), zap.Stringer("metrics_token", cfg.Auth.MetricsToken),
		zap.Reflect("headers", cfg.Upstream.Headers), zap.Any("auth", cfg.Auth))
	require.NoError(t, log.Sync())
	return []string{
		fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", cfg.Upstream.Headers),
		fmt.Sprint(errors.New(fmt.Sprint(cfg.Auth))), string(js), tm.String(), logged.String(),
	}
}

// TestEmptySecretShowsEmpty: "not set" stays visible.
func TestEmptySecretShowsEmpty(t *testing.T) {
	t.Parallel()
	var s Secret
	require.Equal(t, NewSecret(""), s)
	require.False(t, s.IsSet())
	require.Equal(t, "", fmt.Sprint(s))
	require.Equal(t, `""`, fmt.Sprintf("%#v", s))
	js, err := json.Marshal(s)
	require.NoError(t, err)
	require.Equal(t, `""`, string(js))
	var tm bytes.Buffer
	require.NoError(t, toml.NewEncoder(&tm).Encode(Default().Auth))
	require.Contains(t, tm.String(), `token = ""`)
}

// TestSecretDecodes: from the file, the environment and JSON; a value of
// another kind than text is refused without being quoted.
func TestSecretDecodes(t *testing.T) {
	t.Parallel()
	cfg, problems := parse([]byte("[auth]\ntoken = \""+leak+"\"\n[fleet.headers]\nAuthorization = \"Bearer "+leak+"\"\n"),
		[]string{EnvUpstreamHeaderPrefix + "X_KEY=" + leak})
	require.Empty(t, problems)
	require.Equal(t, leak, cfg.Auth.Token.Reveal())
	require.Equal(t, "Bearer "+leak, cfg.Fleet.Headers["Authorization"].Reveal())
	require.Equal(t, leak, cfg.Upstream.Headers["X-Key"].Reveal())

	var s Secret
	require.NoError(t, json.Unmarshal([]byte(`"`+leak+`"`), &s))
	require.Equal(t, leak, s.Reveal())

	for _, tc := range []struct{ doc, want string }{
		{"[auth]\ntoken = 123456789012345678\n", "auth.token: must be text in quotes, not a number"},
		{"[auth]\ntoken = true\n", "auth.token: must be text in quotes, not true or false"},
		{"[upstream.headers]\nX-Key = 123456789012345678\n", "upstream.headers.X-Key: must be text in quotes, not a number"},
		{"[upstream]\nheaders = \"123456789012345678\"\n", "upstream.headers: must be a table of text ([upstream.headers] with name = \"value\" lines), not text"},
	} {
		_, problems := parse([]byte(tc.doc), nil)
		require.Len(t, problems, 1, tc.doc)
		require.Equal(t, tc.want, problems[0].Key+": "+problems[0].Problem)
	}
}

// TestFileTOMLRoundTripsSecrets: the one form with secrets in clear reads
// back to the same configuration.
func TestFileTOMLRoundTripsSecrets(t *testing.T) {
	t.Parallel()
	cfg := withEverySecret(t, leak)
	cfg.DataDir = t.TempDir()
	data, err := FileTOML(cfg)
	require.NoError(t, err)
	require.Contains(t, string(data), leak)
	path := filepath.Join(t.TempDir(), "c.toml")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	got, err := load(path, nil)
	require.NoError(t, err)
	require.Equal(t, cfg, got)
}

// withEverySecret is Default with every Secret, found by walking Config,
// set to value plus its key, and an Authorization header in every map of
// secrets.
func withEverySecret(t *testing.T, value string) Config {
	t.Helper()
	cfg := Default()
	v := reflect.ValueOf(&cfg).Elem()
	n := 0
	for _, f := range keyFields {
		field := v.FieldByIndex(f.index)
		switch field.Type() {
		case secretType:
			field.Set(reflect.ValueOf(NewSecret(value + "-" + f.key)))
			n++
		case secretsMapType:
			field.Set(reflect.ValueOf(map[string]Secret{"Authorization": NewSecret(value + "-" + f.key)}))
			n++
		}
	}
	require.GreaterOrEqual(t, n, 6, "auth.token, auth.metrics_token and four maps of headers")
	return cfg
}

// credentialName is what the name of a key that holds a credential
// looks like.
var credentialName = regexp.MustCompile(`token|passw|secret|key|header|authori[sz]|credential|cookie|url|proxy`)

// urlKey is why a URL key is not a Secret.
const urlKey = "a URL: URLProblem refuses a user name or password in it (TestURLKeysRefuseCredentials), so it holds none; credentials go in the section's headers"

// notSecrets are the keys whose name looks like a credential's, or that
// are maps of text, but that hold none; each says why.
var notSecrets = map[string]string{
	"upstream.base_url":        urlKey,
	"upstream.lookup_base_url": urlKey,
	"upstream.stock_base_url":  urlKey,
	"upstream.proxy":           urlKey,
	"fleet.remote_write_url":   urlKey,
	"fleet.proxy":              urlKey,
	"control.opamp_url":        urlKey,
	"control.proxy":            urlKey,
	// Labels go out with every series pushed, by design (docs/contract.md,
	// [fleet]): they name the shop and the till.
	"fleet.labels": "labels are pushed with every series",
	// Public keys: they check signatures, they open nothing.
	"update.trusted_keys": "minisign public keys",
}

// TestEveryCredentialIsASecret walks Config: a key that may hold a
// credential (its name says so, or it is a map of text) is a Secret or a
// map of them, or is in notSecrets saying why not.
func TestEveryCredentialIsASecret(t *testing.T) {
	t.Parallel()
	root := reflect.TypeFor[Config]()
	matched := map[string]bool{}
	for _, f := range keyFields {
		if f.table {
			continue
		}
		ft := root.FieldByIndex(f.index).Type
		if ft == secretType || ft == secretsMapType {
			continue
		}
		textMap := ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.String
		if !credentialName.MatchString(f.key) && !textMap {
			continue
		}
		matched[f.key] = true
		require.NotEmpty(t, notSecrets[f.key],
			"%s (%s) may hold a credential: make it a config.Secret (a map: map[string]Secret), or list it in notSecrets saying why not", f.key, ft)
	}
	for key := range notSecrets {
		require.True(t, matched[key], "notSecrets lists %s, which is no key that looks like a credential any more", key)
	}
}

// TestURLKeysRefuseCredentials holds what notSecrets says of the URL
// keys: each refuses a user name and password, naming the key, and no
// message quotes the password.
func TestURLKeysRefuseCredentials(t *testing.T) {
	t.Parallel()
	for key, why := range notSecrets {
		if why != urlKey {
			continue
		}
		for _, raw := range []string{"http://till:" + leak + "@127.0.0.1:3128", "till:" + leak + "@127.0.0.1:3128",
			"http://" + leak + "@127.0.0.1:3128", "http://till:" + leak + "@127.0.0.1:3128/a b"} {
			cfg := Default()
			for _, f := range keyFields {
				if f.key == key {
					reflect.ValueOf(&cfg).Elem().FieldByIndex(f.index).SetString(raw)
				}
			}
			err := cfg.Validate()
			require.ErrorContains(t, err, key+": ", raw)
			require.NotContains(t, err.Error(), "hunter2", raw)
		}
	}
	_, problem := URLProblem("till:" + leak + "@127.0.0.1:3128")
	require.Equal(t, `needs http:// or https:// in front, like "http://127.0.0.1:7081", not "(set)@127.0.0.1:3128"`, problem)
}
