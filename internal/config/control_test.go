package config

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestControlRefusals(t *testing.T) {
	for _, c := range []struct {
		name, toml, want string
	}{
		{"ftp URL", "[control]\nopamp_url = \"ftp://hq.example/\"\n", `control.opamp_url: needs wss://, https://, ws:// or http:// in front, not "ftp://"`},
		{"plain ws off loopback", "[control]\nopamp_url = \"ws://hq.example/v1/opamp\"\n", "control.opamp_url: \"ws://hq.example/v1/opamp\" is not a loopback address (for this computer write 127.0.0.1 or [::1]: the name localhost is not trusted): use wss:// or https://"},
		{"plain http off loopback", "[control]\nopamp_url = \"http://10.0.0.1:4320/v1/opamp\"\n", "control.opamp_url: \"http://10.0.0.1:4320/v1/opamp\" is not a loopback address"},
		{"poll below 1s", "[control]\npoll_every = \"500ms\"\n", "control.poll_every: must be at least 1s"},
		{"rollback below 1s", "[control]\nrollback_after = \"0s\"\n", "control.rollback_after: must be at least 1s"},
		{"bad header", "[control.headers]\n\"X Token\" = \"x\"\n", "control.headers.X Token: is not a valid HTTP header name"},
		{"bad proxy", "[control]\nproxy = \"gopher://p\"\n", `control.proxy: needs http://, https:// or socks5:// in front, not "gopher://"`},
		{"missing CA file", "[control]\nca_file = \"/nonexistent/ca.pem\"\n", "control.ca_file: cannot be used as a CA file: open /nonexistent/ca.pem"},
		{"allow auth", "[control]\nallow = [\"accept\", \"auth\"]\n", `control.allow[1]: "auth" can never be set remotely`},
		{"allow a key under data_dir's kin", "[control]\nallow = [\"control.allow\"]\n", `control.allow[0]: "control.allow" can never be set remotely`},
		{"allow unknown", "[control]\nallow = [\"acept\"]\n", `control.allow[0]: "acept" is not a section or key`},
	} {
		t.Run(c.name, func(t *testing.T) { requireRefused(t, c.toml, c.want) })
	}
}

func TestControlSection(t *testing.T) {
	cfg, err := load(writeConfig(t, `[control]
opamp_url = "wss://hq.example/v1/opamp"
poll_every = "10s"
allow = ["accept", "upstream.timeout"]
rollback_after = "2m"
[control.headers]
X-Chain = "north"
`), []string{EnvControlHeaderPrefix + "AUTHORIZATION=Bearer from-env"})
	require.NoError(t, err)
	c := cfg.Control
	require.True(t, c.Enabled())
	require.Equal(t, 10*time.Second, c.PollEvery.Duration)
	require.Equal(t, 2*time.Minute, c.RollbackAfter.Duration)
	require.Equal(t, []string{"accept", "upstream.timeout"}, c.Allow)
	require.Equal(t, map[string]string{"X-Chain": "north", "Authorization": "Bearer from-env"}, RevealAll(c.Headers))
	require.False(t, Default().Control.Enabled(), "off by default")

	for _, loop := range []string{"ws://127.0.0.1:4320/v1/opamp", "http://127.0.0.9:4320/v1/opamp", "ws://[::1]:1/"} {
		c := Default()
		c.Control.OpAMPURL = loop
		require.NoError(t, c.Validate(), loop)
	}
}

const ownFile = `max_connections = 100

[accept]
wait = "3s"

[fleet.labels]
shop = "017"
`

// A fragment is refused, naming the key and its line, for a key it may
// never set or control.allow leaves out, and for a value the file would be
// refused for.
func TestMergeRefuses(t *testing.T) {
	own := writeConfig(t, ownFile)
	for _, c := range []struct {
		name, fragment, key string
		line                int
		want                string
	}{
		{"listen", "listen = \"0.0.0.0:7080\"\n", "listen", 1, "can never be set remotely"},
		{"listen_unix", "\nlisten_unix = \"/tmp/r.sock\"\n", "listen_unix", 2, "can never be set remotely"},
		{"data_dir", "# moved\ndata_dir = \"/tmp\"\n", "data_dir", 2, "can never be set remotely"},
		{"auth.token", "[auth]\ntoken = \"0123456789abcdef0123\"\n", "auth.token", 2, "can never be set remotely (auth is the till's own)"},
		{"auth.allowed_hosts", "[auth]\nallowed_hosts = [\"x\"]\n", "auth.allowed_hosts", 2, "can never be set remotely"},
		{"control.opamp_url", "[control]\nopamp_url = \"wss://evil.example/\"\n", "control.opamp_url", 2, "can never be set remotely"},
		{"control.allow", "[control]\n\nallow = [\"upstream\"]\n", "control.allow", 3, "can never be set remotely"},
		{"control header", "[control.headers]\nAuthorization = \"x\"\n", "control.headers.Authorization", 2, "can never be set remotely"},
		{"upstream not allowed", "[upstream]\nbase_url = \"http://10.1.1.1:7081\"\n", "upstream.base_url", 2, "is not in control.allow"},
		{"cache not allowed", "[cache]\nmax_entries = 5\n", "cache.max_entries", 2, "is not in control.allow"},
		{"dotted at top", "upstream.timeout = \"5s\"\n", "upstream.timeout", 1, "is not in control.allow"},
		{"bad choice", "[sync]\non_ambiguous = \"maybe\"\n", "sync.on_ambiguous", 2, "must be one of retry, hold"},
		{"named key, section allowed", "[accept]\nqueued_answer = \"error\"\n", "accept.queued_answer", 2, `names "accept.queued_answer" itself`},
		{"wrong type", "[sync]\n\nconcurrency = \"2\"\n", "sync.concurrency", 3, "remove the quotes"},
		{"unknown key", "[accept]\nqueued_anwser = \"error\"\n", "accept.queued_anwser", 2, "did you mean accept.queued_answer"},
		{"against the own file", "[alerts]\nunsent_critical = \"1h\"\n", "alerts.unsent_warn", 0, "must not be longer than alerts.unsent_critical (1h0m0s)"},
		{"named key, its table allowed", "[backup]\ndir = \"/mnt/usb\"\n", "backup.dir", 2, `names "backup.dir" itself`},
		{"syntax", "[accept\nwait = \"1s\"\n", "", 1, "syntax error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := merge(Default(), own, []byte(c.fragment), nil)
			requireProblem(t, err, c.key, c.line, c.want)
		})
	}
}

func TestMergeAllowEntries(t *testing.T) {
	for _, c := range []struct {
		name, allow, fragment, refused string
	}{
		{"section allows its keys", `["accept"]`, "[accept]\nanswer_count = 5\n", ""},
		{"key allows itself", `["accept.queued_answer"]`, "[accept]\nqueued_answer = \"error\"\n", ""},
		{"key allows not its siblings", `["accept.queued_answer"]`, "[accept]\nqueued_answer = \"error\"\nanswer_count = 5\n", "accept.answer_count"},
		{"section allows map entries", `["fleet"]`, "[fleet.labels]\ngroup = \"north\"\n", ""},
		{"upstream when listed", `["upstream"]`, "[upstream]\ntimeout = \"5s\"\n", ""},
		{"one upstream key when listed", `["upstream.timeout"]`, "[upstream]\ntimeout = \"5s\"\nmax_answer = 2\n", "upstream.max_answer"},
		{"empty allow refuses all", `[]`, "[log]\nlevel = \"debug\"\n", "log.level"},
	} {
		t.Run(c.name, func(t *testing.T) {
			own := writeConfig(t, ownFile+"\n[control]\nallow = "+c.allow+"\n")
			m, err := merge(Default(), own, []byte(c.fragment), nil)
			if c.refused == "" {
				require.NoError(t, err)
				require.NotEmpty(t, m.RemoteKeys)
				return
			}
			requireProblem(t, err, c.refused, 0, "is not in control.allow")
		})
	}
}

func TestMergeAccepted(t *testing.T) {
	own := writeConfig(t, ownFile)
	m, err := merge(Default(), own, []byte("[accept]\nanswer_count = 5\n[fleet.labels]\ngroup = \"north\"\n"),
		[]string{EnvFleetHeaderPrefix + "AUTHORIZATION=Bearer env"})
	require.NoError(t, err)
	require.Equal(t, 5, m.Config.Accept.AnswerCount)
	require.Equal(t, 3*time.Second, m.Config.Accept.Wait.Duration, "the own file's value stays")
	require.Equal(t, map[string]string{"shop": "017", "group": "north"}, m.Config.Fleet.Labels, "tables merge")
	require.Equal(t, "Bearer env", m.Config.Fleet.Headers["Authorization"].Reveal(), "the environment still applies")
	require.Equal(t, []string{"accept.answer_count", "fleet.labels.group"}, m.RemoteKeys)
	require.Len(t, m.Hash, 64)

	for _, blank := range []string{"", "  \n", "# nothing yet\n"} {
		m, err := merge(Default(), own, []byte(blank), nil)
		require.NoError(t, err)
		require.Equal(t, 3*time.Second, m.Config.Accept.Wait.Duration)
		require.Equal(t, QueuedAnswer202, m.Config.Accept.QueuedAnswer)
		require.Empty(t, m.RemoteKeys)
	}
}

func TestMergeBadOwnFile(t *testing.T) {
	own := writeConfig(t, "[sync]\nconcurrency = 0\n")
	_, err := merge(Default(), own, []byte("[log]\nlevel = \"debug\"\n"), nil)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, own, e.Source, "the own file is named, not the fragment")
}

// requireProblem checks err is a refusal of the fragment with a problem
// naming key, on line (0: any line), saying want.
func requireProblem(t *testing.T, err error, key string, line int, want string) {
	t.Helper()
	require.ErrorIs(t, err, ErrInvalid)
	var e *Error
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, FragmentSource, e.Source)
	for _, p := range e.Problems {
		if p.Key == key && (line == 0 || p.Line == line) {
			require.Contains(t, p.Problem, want)
			return
		}
	}
	require.Failf(t, "problem not reported", "want %s on line %d saying %q; got:\n%v", key, line, want, err)
}

// TestMergeSendsTheOwnHeadersOnlyToTheOwnURL: the till's own push
// headers (its file's and RECEIPTD_FLEET_HEADERS_*) go only to its own
// file's remote_write_url; a fragment that moves the push (where the own
// file names the key) sends only the headers it sets itself.
func TestMergeSendsTheOwnHeadersOnlyToTheOwnURL(t *testing.T) {
	own := writeConfig(t, `[fleet]
remote_write_url = "https://metrics.chain.example/api/v1/write"
[fleet.headers]
Authorization = "Bearer own"
[control]
allow = ["fleet", "fleet.remote_write_url", "fleet.headers"]
`)
	env := []string{EnvFleetHeaderPrefix + "X_SCOPE=from-env"}
	m, err := merge(Default(), own, []byte("[fleet]\ninterval = \"2m\"\n"), env)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Authorization": "Bearer own", "X-Scope": "from-env"}, RevealAll(m.Config.Fleet.Headers), "the own URL: the own headers")

	m, err = merge(Default(), own, []byte("[fleet]\nremote_write_url = \"https://elsewhere.example/write\"\n"), env)
	require.NoError(t, err)
	require.Empty(t, m.Config.Fleet.Headers, "another URL gets none of the till's own headers")

	m, err = merge(Default(), own, []byte("[fleet]\nremote_write_url = \"https://elsewhere.example/write\"\n[fleet.headers]\nX-Token = \"sent-by-hq\"\n"), env)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"X-Token": "sent-by-hq"}, RevealAll(m.Config.Fleet.Headers), "only the fragment's own")
}
