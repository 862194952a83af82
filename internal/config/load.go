package config

import (
	"errors"
	"fmt"
	"net/textproto"
	"os"
	"reflect"
	"slices"
	"strings"
)

// ErrInvalid is wrapped by every error that a bad configuration causes:
// unknown keys, values of the wrong type, values out of range, TOML syntax.
// errors.As with *KeyError finds the first key-level problem.
var ErrInvalid = errors.New("invalid configuration")

// Environment variables read by Load after the file, so secrets need not be
// written into it.
const (
	// EnvAuthToken replaces auth.token.
	EnvAuthToken = "RECEIPTD_AUTH_TOKEN"
	// EnvUpstreamHeaderPrefix + NAME sets the header NAME (underscores
	// become hyphens, canonical case: X_API_KEY → X-Api-Key) on every
	// request to upstream.base_url.
	EnvUpstreamHeaderPrefix = "RECEIPTD_UPSTREAM_HEADERS_"
	// EnvLookupHeaderPrefix + NAME does the same for upstream.lookup_base_url.
	EnvLookupHeaderPrefix = "RECEIPTD_UPSTREAM_LOOKUP_HEADERS_"
)

// Load returns Default, overlaid with the TOML file at path (skipped when
// path is ""), then with the environment overrides (EnvAuthToken and the
// header prefixes), then checked with Validate. A missing file is an error
// wrapping fs.ErrNotExist, so a caller may fall back to defaults for
// DefaultPath only. Every other refusal is an *Error listing every problem
// found, each naming its key and its line in the file; it matches
// ErrInvalid.
func Load(path string) (Config, error) {
	return load(path, os.Environ())
}

// LoadOnto is Load with base in place of Default: the file's keys, then
// the environment overrides, are laid over base, and the result is
// checked with Validate. A key the file does not set keeps base's value,
// so a caller with defaults of its own (receiptd demo) lets a file change
// only what it names. A missing file is an error, as for Load.
func LoadOnto(base Config, path string) (Config, error) {
	return loadOnto(base, path, os.Environ())
}

func load(path string, environ []string) (Config, error) {
	return loadOnto(Default(), path, environ)
}

func loadOnto(base Config, path string, environ []string) (Config, error) {
	var data []byte
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return Config{}, fmt.Errorf("read config: %w", err)
		}
	}
	cfg, problems := parseOnto(base, data, environ)
	if len(problems) > 0 {
		return Config{}, &Error{Source: path, Problems: problems}
	}
	return cfg, nil
}

// parse is Load on a document already read: the configuration, or every
// problem found in it, sorted by line. A syntax error is reported alone
// (nothing after it can be read); otherwise each bad value and unknown key
// is reported, then whatever Validate finds in the values that could be
// read (a bad value leaves its default in place).
func parse(data []byte, environ []string) (Config, []*KeyError) {
	return parseOnto(Default(), data, environ)
}

// parseOnto is parse over base instead of Default. Every map and list of
// base is copied first (cloneRefs), so neither the file's headers and
// labels nor the environment's write into the caller's.
func parseOnto(base Config, data []byte, environ []string) (Config, []*KeyError) {
	cfg := base
	cloneRefs(reflect.ValueOf(&cfg).Elem())
	lines, problems := decodeDoc(data, &cfg)
	if len(problems) > 0 && problems[0].Key == "" {
		return Config{}, problems
	}
	tokenFromEnv := applyEnv(&cfg, environ)
	if err := cfg.Validate(); err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			ke := *e.(*KeyError)
			if hasKey(problems, ke.Key) {
				continue // its value was refused; the default stands in
			}
			ke.Line = lineOf(&ke, lines)
			if ke.Key == "auth.token" && tokenFromEnv {
				ke.Line = 0
				ke.Problem += " (the token comes from " + EnvAuthToken + ")"
			}
			problems = append(problems, &ke)
		}
	}
	if len(problems) > 0 {
		sortByLine(problems)
		return Config{}, problems
	}
	return cfg, nil
}

func hasKey(problems []*KeyError, key string) bool {
	for _, p := range problems {
		if p.Key == key {
			return true
		}
	}
	return false
}

// applyEnv overrides secrets from environ ("NAME=value" entries) and
// reports whether auth.token came from it.
func applyEnv(cfg *Config, environ []string) (tokenFromEnv bool) {
	// Sorted, so a header set twice under different cases resolves the same
	// way whatever order the system lists the variables in.
	environ = slices.Sorted(slices.Values(environ))
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch {
		case name == EnvAuthToken:
			// Set but empty (a unit file's "Environment=RECEIPTD_AUTH_TOKEN=")
			// must not silently remove the file's token.
			if value != "" {
				cfg.Auth.Token = NewSecret(value)
				tokenFromEnv = true
			}
		case strings.HasPrefix(name, EnvLookupHeaderPrefix):
			setHeader(&cfg.Upstream.LookupHeaders, strings.TrimPrefix(name, EnvLookupHeaderPrefix), value)
		case strings.HasPrefix(name, EnvControlHeaderPrefix):
			setHeader(&cfg.Control.Headers, strings.TrimPrefix(name, EnvControlHeaderPrefix), value)
		case strings.HasPrefix(name, EnvFleetHeaderPrefix):
			setHeader(&cfg.Fleet.Headers, strings.TrimPrefix(name, EnvFleetHeaderPrefix), value)
		case strings.HasPrefix(name, EnvUpstreamHeaderPrefix):
			setHeader(&cfg.Upstream.Headers, strings.TrimPrefix(name, EnvUpstreamHeaderPrefix), value)
		}
	}
	return tokenFromEnv
}

func setHeader(headers *map[string]Secret, envName, value string) {
	if envName == "" {
		return
	}
	name := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(envName, "_", "-"))
	if *headers == nil {
		*headers = map[string]Secret{}
	}
	for k := range *headers { // a header set in the file under another case
		if strings.EqualFold(k, name) {
			delete(*headers, k)
		}
	}
	(*headers)[name] = NewSecret(value)
}

// cloneRefs replaces every map and slice in the struct v, and in the
// structs within it, by a copy of its own. It walks the type rather than
// naming fields, so a section added later (as [control] was, with its
// headers) is copied without anyone remembering to list it.
func cloneRefs(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch f.Kind() {
		case reflect.Struct:
			cloneRefs(f)
		case reflect.Map:
			if !f.IsNil() {
				c := reflect.MakeMapWithSize(f.Type(), f.Len())
				for it := f.MapRange(); it.Next(); {
					c.SetMapIndex(it.Key(), it.Value())
				}
				f.Set(c)
			}
		case reflect.Slice:
			if !f.IsNil() {
				f.Set(reflect.AppendSlice(reflect.MakeSlice(f.Type(), 0, f.Len()), f))
			}
		}
	}
}
