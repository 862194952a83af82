package config

import (
	"errors"
	"fmt"
	"net/textproto"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
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
// DefaultPath only. Every other refusal wraps ErrInvalid and names the key
// or the line.
func Load(path string) (Config, error) {
	return load(path, os.Environ())
}

func load(path string, environ []string) (Config, error) {
	if path == "" {
		cfg, err := parse(nil, environ)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := parse(data, environ)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// parse is Load on a document already read.
func parse(data []byte, environ []string) (Config, error) {
	cfg := Default()
	if err := decode(data, &cfg); err != nil {
		return Config{}, err
	}
	applyEnv(&cfg, environ)
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// decode overlays the TOML document data on cfg and refuses unknown keys.
func decode(data []byte, cfg *Config) error {
	md, err := toml.NewDecoder(strings.NewReader(string(data))).Decode(cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		errs := make([]error, 0, len(undecoded))
		for _, k := range undecoded {
			errs = append(errs, &KeyError{Key: k.String(), Problem: "unknown key"})
		}
		return errors.Join(errs...)
	}
	return nil
}

// applyEnv overrides secrets from environ ("NAME=value" entries).
func applyEnv(cfg *Config, environ []string) {
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
				cfg.Auth.Token = value
			}
		case strings.HasPrefix(name, EnvLookupHeaderPrefix):
			setHeader(&cfg.Upstream.LookupHeaders, strings.TrimPrefix(name, EnvLookupHeaderPrefix), value)
		case strings.HasPrefix(name, EnvUpstreamHeaderPrefix):
			setHeader(&cfg.Upstream.Headers, strings.TrimPrefix(name, EnvUpstreamHeaderPrefix), value)
		}
	}
}

func setHeader(headers *map[string]string, envName, value string) {
	if envName == "" {
		return
	}
	name := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(envName, "_", "-"))
	if *headers == nil {
		*headers = map[string]string{}
	}
	for k := range *headers { // a header set in the file under another case
		if strings.EqualFold(k, name) {
			delete(*headers, k)
		}
	}
	(*headers)[name] = value
}
