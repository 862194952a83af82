package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"
)

const examplePath = "../../config.example.toml"

func TestDefaultIsValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, Default().Validate())
	cfg, err := load("", nil)
	require.NoError(t, err)
	require.Equal(t, Default(), cfg)
}

// documentedDefault is Default with the values config.example.toml shows
// for keys whose default depends on the system.
func documentedDefault() Config {
	want := Default()
	want.DataDir = "/var/lib/receiptd"
	return want
}

// uncomment turns every "# key = value" line into "key = value", so the
// example's documented defaults are decoded rather than skipped.
func uncomment(data []byte) []byte {
	return regexp.MustCompile(`(?m)^# ([a-z_]+ = )`).ReplaceAll(data, []byte("$1"))
}

func TestExampleAsShippedLoadsToDefault(t *testing.T) {
	t.Parallel()
	cfg, err := load(examplePath, nil)
	require.NoError(t, err)
	require.Equal(t, Default(), cfg)
}

func TestExampleDocumentsEveryDefault(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(examplePath)
	require.NoError(t, err)
	live := uncomment(data)
	require.NotEqual(t, data, live, "the example has commented-out defaults")

	// Decoded over a zero Config, every value must come from the file.
	var got Config
	md, err := toml.NewDecoder(bytes.NewReader(live)).Decode(&got)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "keys in the example that Config lacks")
	require.Equal(t, documentedDefault(), got)

	for _, key := range leafKeys() {
		require.True(t, md.IsDefined(strings.Split(key, ".")...), "key %s is not in config.example.toml", key)
	}
	switch runtime.GOOS {
	case "linux":
		require.Equal(t, "/var/lib/receiptd", Default().DataDir)
	case "windows":
		pd := os.Getenv("ProgramData")
		require.True(t, filepath.IsAbs(pd), "ProgramData=%q", pd)
		require.Equal(t, filepath.Join(pd, "receiptd", "data"), Default().DataDir)
		require.Equal(t, filepath.Join(pd, "receiptd", "config.toml"), DefaultPath())
	}
}

func TestLeafKeysSeesNestedKeys(t *testing.T) {
	t.Parallel()
	keys := leafKeys()
	require.Contains(t, keys, "upstream.paths.classification")
	require.Contains(t, keys, "cache.refresh.info")
	require.Contains(t, keys, "upstream.headers")
	require.Len(t, keys, 94) // 61 + 8 [posapi] + 3 [backup] + 9 [fleet] + 7 [control] + alerts.outage_critical_after + 5 [update]
}

// requireRefused requires a file holding text to be refused as a config
// error (ErrInvalid) whose text contains want.
func requireRefused(t *testing.T, text, want string) {
	t.Helper()
	_, err := Load(writeConfig(t, text))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, want)
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// absPath is a Unix path made absolute on this system (with a drive on
// Windows, where "/srv" is not absolute).
func absPath(p string) string {
	if runtime.GOOS == "windows" {
		return `C:` + filepath.FromSlash(p)
	}
	return p
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	dataDir, logFile := absPath("/srv/receiptd"), absPath("/var/log/receiptd/receiptd.log")
	path := writeConfig(t, `
listen = "192.168.1.20:7080"
data_dir = '`+dataDir+`'
[accept]
wait = "0s"
timezone = "Local"
[upstream]
base_url = "https://posapi.shop.lan:8443/"
proxy = "socks5://127.0.0.1:1080"
[upstream.headers]
X-Api-Key = "from-file"
[sync]
on_ambiguous = "hold"
concurrency = 4
[auth]
token = "0123456789abcdef0123"
allowed_hosts = ["till-7.shop.lan"]
[log]
file = '`+logFile+`'
`)
	cfg, err := load(path, nil)
	require.NoError(t, err)
	want := Default()
	want.Listen = "192.168.1.20:7080"
	want.DataDir = dataDir
	want.Accept.Wait = Dur(0)
	want.Accept.Timezone = "Local"
	want.Upstream.BaseURL = "https://posapi.shop.lan:8443/"
	want.Upstream.Proxy = "socks5://127.0.0.1:1080"
	want.Upstream.Headers = map[string]Secret{"X-Api-Key": NewSecret("from-file")}
	want.Sync.OnAmbiguous = "hold"
	want.Sync.Concurrency = 4
	want.Auth.Token = NewSecret("0123456789abcdef0123")
	want.Auth.AllowedHosts = []string{"till-7.shop.lan"}
	want.Log.File = logFile
	require.Equal(t, want, cfg)
}

func TestLoadEnvOverrides(t *testing.T) {
	path := writeConfig(t, `
listen = "0.0.0.0:7080"
[upstream.headers]
x-api-key = "from-file"
Keep = "me"
`)
	_, err := load(path, nil)
	require.ErrorContains(t, err, "token")

	cfg, err := load(path, []string{
		"PATH=/usr/bin",
		"RECEIPTD_AUTH_TOKEN=s3cret-s3cret-s3cret",
		"RECEIPTD_UPSTREAM_HEADERS_X_API_KEY=from-env",
		"RECEIPTD_UPSTREAM_LOOKUP_HEADERS_X_GATEWAY=gw",
		"RECEIPTD_UPSTREAM_HEADERS_=ignored",
	})
	require.NoError(t, err)
	require.Equal(t, "s3cret-s3cret-s3cret", cfg.Auth.Token.Reveal())
	require.Equal(t, map[string]string{"X-Api-Key": "from-env", "Keep": "me"}, RevealAll(cfg.Upstream.Headers))
	require.Equal(t, map[string]string{"X-Gateway": "gw"}, RevealAll(cfg.Upstream.LookupHeaders))

	withFileToken := writeConfig(t, "[auth]\ntoken = \"from-the-file-0123\"\n")
	cfg, err = load(withFileToken, []string{"RECEIPTD_AUTH_TOKEN="})
	require.NoError(t, err)
	require.Equal(t, "from-the-file-0123", cfg.Auth.Token.Reveal(), "an empty variable keeps the file's token")

	t.Setenv(EnvAuthToken, "through-the-real-environment")
	cfg, err = Load(path)
	require.NoError(t, err)
	require.Equal(t, "through-the-real-environment", cfg.Auth.Token.Reveal())
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NotErrorIs(t, err, ErrInvalid)
}

func TestLoadUnknownKeysNamesEveryKey(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
lisen = "127.0.0.1:7080"
[sync]
concurency = 3
[upstream.pathz]
info = "/rest/info"
[cache.refresh]
barcode = "1h"
`)
	_, err := Load(path)
	require.ErrorIs(t, err, ErrInvalid)
	for _, key := range []string{"lisen", "sync.concurency", "upstream.pathz", "cache.refresh.barcode"} {
		require.ErrorContains(t, err, key+": unknown key")
	}
	require.ErrorContains(t, err, path)
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	require.Equal(t, "lisen", ke.Key)
}

func TestLoadRefusesBadValues(t *testing.T) {
	t.Parallel()
	caFile := filepath.Join(t.TempDir(), "missing.pem")
	cases := []struct {
		name, toml, want string
	}{
		{"toml syntax", "listen = \n", "line 1"},
		{"toml duplicate key", "listen = \"a:1\"\nlisten = \"b:2\"\n", "line 2"},
		{"string for integer", "[sync]\nconcurrency = \"two\"\n", `line 2: sync.concurrency: must be a whole number, not the text "two"`},
		{"integer for string", "listen = 7080\n", `line 1: listen: must be text in quotes, not the number 7080`},
		{"table for string", "[listen]\n", "line 1: listen: must be text in quotes, not a table"},
		{"bad duration", "[accept]\nwait = \"5 seconds\"\n", `line 2: accept.wait: must be a duration like "5s" or "24h", not "5 seconds"`},
		{"duration without unit", "[accept]\nwait = 5\n", `line 2: accept.wait: must be a duration in quotes, like "5s" or "24h", not the number 5`},
		{"concurrency 0", "[sync]\nconcurrency = 0\n", "sync.concurrency: must be at least 1"},
		{"concurrency huge", "[sync]\nconcurrency = 1000\n", "sync.concurrency: must be at least 1 and at most 16"},
		{"non-loopback without token", "listen = \"0.0.0.0:7080\"\n", "listen: \"0.0.0.0:7080\" is not a loopback address: set auth.token"},
		{"all interfaces without token", "listen = \":7080\"\n", "auth.token"},
		{"listen not host:port", "listen = \"localhost\"\n", "listen: must be host:port"},
		{"listen bad port", "listen = \"127.0.0.1:99999\"\n", "listen: port \"99999\""},
		{"no listener", "listen = \"\"\n", "listen: must be set when listen_unix is empty"},
		{"relative data_dir", "data_dir = \"data\"\n", "data_dir: must be an absolute path"},
		{"zero shutdown", "shutdown_timeout = \"0s\"\n", "shutdown_timeout: must be longer than 0"},
		{"negative wait", "[accept]\nwait = \"-1s\"\n", "accept.wait: must be at least 0s and at most 5m, not -1s"},
		{"max_wait below wait", "[accept]\nwait = \"10s\"\nmax_wait = \"5s\"\n", "accept.max_wait: must not be shorter than accept.wait"},
		{"unknown time zone", "[accept]\ntimezone = \"Mars/Olympus\"\n", "accept.timezone: unknown time zone"},
		{"base_url without scheme", "[upstream]\nbase_url = \"127.0.0.1:7081\"\n", "upstream.base_url: needs http:// or https:// in front"},
		{"base_url ftp", "[upstream]\nbase_url = \"ftp://posapi/\"\n", "upstream.base_url: needs http:// or https:// in front, not \"ftp://\""},
		{"base_url is our listen", "[upstream]\nbase_url = \"http://localhost:7080\"\n", "upstream.base_url: \"http://localhost:7080\" is receiptd's own listen address"},
		{"lookup_base_url empty", "[upstream]\nlookup_base_url = \"\"\n", "upstream.lookup_base_url: must be set"},
		{"path without slash", "[upstream.paths]\ninfo = \"rest/info\"\n", "upstream.paths.info: must be a path starting with"},
		{"zero timeout", "[upstream]\ntimeout = \"0s\"\n", "upstream.timeout: must be longer than 0"},
		{"bad header name", "[upstream.headers]\n\"X Key\" = \"v\"\n", "upstream.headers.X Key: is not a valid HTTP header name"},
		{"header set twice", "[upstream.headers]\nX-Key = \"a\"\nx-key = \"b\"\n", "upstream.headers.x-key: is set twice (as \"X-Key\" too)"},
		{"header value line break", "[upstream.lookup_headers]\nX-Key = \"a\\r\\nEvil: 1\"\n", "upstream.lookup_headers.X-Key: value must not contain line breaks"},
		{"missing ca_file", "[upstream]\nca_file = '" + caFile + "'\n", "upstream.ca_file: cannot be used as a CA file: open "},
		{"ftp proxy", "[upstream]\nproxy = \"ftp://proxy:21\"\n", "upstream.proxy: needs http://, https:// or socks5:// in front"},
		{"bad queued_answer", "[accept]\nqueued_answer = \"503\"\n", "accept.queued_answer: must be one of 202, error, not \"503\""},
		{"zero answer_ttl", "[accept]\nanswer_ttl = \"0s\"\n", "accept.answer_ttl: must be longer than 0"},
		{"zero answer_count", "[accept]\nanswer_count = 0\n", "accept.answer_count: must be at least 1"},
		{"huge answer_mb", "[accept]\nanswer_mb = 4096\n", "accept.answer_mb: must be at least 1 and at most 1024"},
		{"zero min_backoff", "[sync]\nmin_backoff = \"0s\"\n", "sync.min_backoff: must be longer than 0"},
		{"max below min backoff", "[sync]\nmin_backoff = \"10s\"\nmax_backoff = \"1s\"\n", "sync.max_backoff: must not be shorter than sync.min_backoff"},
		{"bad on_ambiguous", "[sync]\non_ambiguous = \"drop\"\n", "sync.on_ambiguous: must be one of retry, hold, not \"drop\""},
		{"max_connections 0", "max_connections = 0\n", "max_connections: must be at least 1 and at most 4096, not 0"},
		{"max_ambiguous 0", "[sync]\nmax_ambiguous = 0\n", "sync.max_ambiguous: must be at least 1 and at most 10, not 0"},
		{"max_answer 0", "[upstream]\nmax_answer = 0\n", "upstream.max_answer: must be at least 1 and at most 64, not 0"},
		{"max_answer huge", "[upstream]\nmax_answer = 65\n", "upstream.max_answer: must be at least 1 and at most 64, not 65"},
		{"refresh zero", "[cache.refresh]\ninfo = \"0s\"\n", "cache.refresh.info: must be at least 1s"},
		{"negative negative_ttl", "[cache]\nnegative_ttl = \"-1m\"\n", "cache.negative_ttl: must be longer than 0"},
		{"zero negative_ttl", "[cache]\nnegative_ttl = \"0s\"\n", "cache.negative_ttl: must be longer than 0"},
		{"negative max_stale", "[cache]\nmax_stale = \"-1h\"\n", "cache.max_stale: must not be negative"},
		{"no cache entries", "[cache]\nmax_entries = 0\n", "cache.max_entries: must be at least 1"},
		{"warn after critical", "[alerts]\nunsent_warn = \"96h\"\n", "alerts.unsent_warn: must not be longer than alerts.unsent_critical"},
		{"zero critical", "[alerts]\nunsent_warn = \"0s\"\nunsent_critical = \"0s\"\n", "alerts.unsent_critical: must be longer than 0"},
		{"zero outage grace", "[alerts]\noutage_critical_after = \"0s\"\n", "alerts.outage_critical_after: must be longer than 0"},
		{"zero keep", "[retention]\nkeep = \"0s\"\n", "retention.keep: must be at least 168h, not 0s"},
		{"zero prune_interval", "[retention]\nprune_interval = \"0s\"\n", "retention.prune_interval: must be at least 1m and at most 24h, not 0s"},
		{"short token", "[auth]\ntoken = \"abc\"\n", "auth.token: must be at least 16 characters"},
		{"token with space", "[auth]\ntoken = \"0123456789 abcdef\"\n", "auth.token: must not contain spaces"},
		{"allowed host URL", "[auth]\nallowed_hosts = [\"ok.lan\", \"http://x\"]\n", "auth.allowed_hosts[1]: must be a host name"},
		{"bad log level", "[log]\nlevel = \"verbose\"\n", "log.level: must be one of debug, info, warn, error, not \"verbose\""},
		{"bad log format", "[log]\nformat = \"xml\"\n", "log.format: must be one of auto, json, console"},
		{"zero max_size_mb", "[log]\nmax_size_mb = 0\n", "log.max_size_mb: must be at least 1"},
		{"zero max_files", "[log]\nmax_files = 0\n", "log.max_files: must be at least 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { requireRefused(t, c.toml, c.want) })
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Sync.Concurrency = 0
	cfg.Log.Level = "loud"
	cfg.Upstream.Timeout = Dur(-time.Second)
	err := cfg.Validate()
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ke *KeyError
		require.True(t, errors.As(e, &ke))
		keys = append(keys, ke.Key)
	}
	require.Equal(t, []string{"upstream.timeout", "sync.concurrency", "log.level"}, keys)
}

func TestLoopbackListenNeedsNoToken(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"127.0.0.1:7080", "127.0.0.2:1", "[::1]:7080", "localhost:0"} {
		cfg := Default()
		cfg.Listen = listen
		require.NoError(t, cfg.Validate(), listen)
	}
	cfg := Default()
	cfg.Listen = "[::]:7080"
	cfg.Auth.Token = NewSecret("a-long-enough-token")
	require.NoError(t, cfg.Validate())
	cfg.Listen, cfg.ListenUnix = "", "/run/receiptd/receiptd.sock"
	require.NoError(t, cfg.Validate())
}

func TestDurationRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, toml.NewEncoder(&buf).Encode(Default()))
	require.Contains(t, buf.String(), `wait = "5s"`)
	var back Config
	_, err := toml.Decode(buf.String(), &back)
	require.NoError(t, err)
	require.Equal(t, Default(), back)
}

func TestAcceptLocation(t *testing.T) {
	t.Parallel()
	loc, err := Default().Accept.Location()
	require.NoError(t, err)
	require.Equal(t, "Asia/Ulaanbaatar", loc.String())
	_, offset := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Zone()
	require.Equal(t, 8*3600, offset)
}

func TestDefaultPath(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		require.True(t, strings.HasSuffix(DefaultPath(), `\receiptd\config.toml`))
		return
	}
	require.Equal(t, "/etc/receiptd/config.toml", DefaultPath())
}
