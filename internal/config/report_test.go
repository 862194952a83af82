package config

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadReportsEveryProblemWithItsLine loads a file with a bad
// duration, an unknown key and a wrong type, reported together, each with
// its line, in the file's own terms.
func TestLoadReportsEveryProblemWithItsLine(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `listen = "127.0.0.1:7080"

[accept]
wait = "5 s"

[sync]
concurency = 3
concurrency = "2"
timeout = "5s"

[upstream.headers]
X-Key = 1

[log]
level = "loud"
`)
	_, err := load(path, nil)
	require.ErrorIs(t, err, ErrInvalid)
	require.EqualError(t, err, path+`: 6 problems:
  line 4: accept.wait: must be a duration like "5s" or "24h", not "5 s"
  line 7: sync.concurency: unknown key; did you mean sync.concurrency?
  line 8: sync.concurrency: must be a whole number, not the text "2" (remove the quotes)
  line 9: sync.timeout: unknown key; did you mean upstream.timeout?
  line 12: upstream.headers.X-Key: must be text in quotes, not a number
  line 15: log.level: must be one of debug, info, warn, error, not "loud"`)
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	require.Equal(t, KeyError{Key: "accept.wait", Problem: `must be a duration like "5s" or "24h", not "5 s"`, Line: 4}, *ke)
}

func TestLoadProblemMessages(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, toml, want string }{
		{"one problem", "[sync]\nconcurrency = 0\n",
			"1 problem:\n  line 2: sync.concurrency: must be at least 1 and at most 16, not 0"},
		{"dotted key", "sync.concurrency = \"x\"\n",
			"  line 1: sync.concurrency: must be a whole number, not the text \"x\""},
		{"inline table", "upstream = { timeout = 5 }\n",
			"  line 1: upstream.timeout: must be a duration in quotes, like \"5s\" or \"24h\", not the number 5"},
		{"number for a table", "accept = 1\n",
			"  line 1: accept: must be a table ([accept] with its keys below it), not the number 1"},
		{"array of tables", "[[log]]\nlevel = \"info\"\n",
			"  line 1: log: must be a table ([log] with its keys below it), not a list"},
		{"list of numbers", "[auth]\nallowed_hosts = [1]\n",
			"  line 2: auth.allowed_hosts: must be a list of text, like [\"a\", \"b\"], not a list"},
		{"float for integer", "[log]\nmax_files = 1.5\n",
			"  line 2: log.max_files: must be a whole number, not the number 1.5"},
		{"bool for text", "[log]\nlevel = true\n",
			"  line 2: log.level: must be text in quotes, not true"},
		{"unknown table", "[syncc]\nconcurrency = 1\n",
			"1 problem:\n  line 1: syncc: unknown key; did you mean sync?"},
		{"no guess", "x = 1\n[cache.refresh]\ny = 2\n",
			"2 problems:\n  line 1: x: unknown key\n  line 3: cache.refresh.y: unknown key"},
		{"name of two tables", "info = \"1h\"\n",
			"  line 1: info: unknown key; did you mean upstream.paths.info or cache.refresh.info?"},
		{"a key's case", "Listen = \"127.0.0.1:1\"\n[SYNC]\nconcurrency = 0\n",
			"1 problem:\n  line 3: sync.concurrency: must be at least 1"},
		{"the other key's line", "[accept]\n\nwait = \"90s\"\n",
			"  line 3: accept.max_wait: must not be shorter than accept.wait (1m30s)"},
		{"index of a list", "[auth]\nallowed_hosts = [\"ok\", \"http://x\"]\n",
			"  line 2: auth.allowed_hosts[1]: must be a host name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(writeConfig(t, c.toml), nil)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestSyntaxErrorLine: the line is the one the mistake is on, also when
// the parser notices it at the line's end.
func TestSyntaxErrorLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, toml string
		line       int
		problem    string
	}{
		{"unclosed table name", "a = 1\n[sync\nb = 2\n", 2, `syntax error: expected '.' or ']' to end table name, but got '\n' instead`},
		{"key without value", "a = 1\nb =\nc = 2\n", 2, `syntax error: expected value but found '\n' instead`},
		{"unquoted duration", "a = 1\nwait = 5s\nb = 2\n", 2, "syntax error: expected a top-level item to end with a newline, comment, or EOF, but got 's' instead"},
		{"unclosed string", "a = 1\nwait = \"5s\nb = 2\n", 2, "syntax error: strings cannot contain newlines"},
		{"duplicate key", "listen = \"a:1\"\nlisten = \"b:2\"\n", 2, "syntax error: Key 'listen' has already been defined."},
		{"unclosed multi-line string at the end", "a = 1\nb = \"\"\"abc\nc = 2\n", 3, `syntax error: unexpected EOF; expected '"""'`},
		{"first line", "listen = \n", 1, `syntax error: expected value but found '\n' instead`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, problems := parse([]byte(c.toml), nil)
			require.Equal(t, []*KeyError{{Problem: c.problem, Line: c.line}}, problems)
		})
	}
}

func TestTokenFromEnvironmentHasNoLine(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "[auth]\ntoken = \"from-the-file-0123\"\n")
	_, err := load(path, []string{EnvAuthToken + "=short"})
	require.EqualError(t, err, path+": 1 problem:\n"+
		"  auth.token: must be at least 16 characters long (the token comes from RECEIPTD_AUTH_TOKEN)")

	_, err = load("", []string{EnvAuthToken + "=short"})
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, "", e.Source)
	require.EqualError(t, err, "the defaults with the environment: 1 problem:\n"+
		"  auth.token: must be at least 16 characters long (the token comes from RECEIPTD_AUTH_TOKEN)")
}

func TestNearKeys(t *testing.T) {
	t.Parallel()
	for key, want := range map[string][]string{
		"sync.concurency":       {"sync.concurrency"},
		"lisen":                 {"listen"},
		"upstream.pathz":        {"upstream.paths"},
		"Upstream.Timout":       {"upstream.timeout"},
		"concurrency":           {"sync.concurrency"},
		"cache.refresh.barcode": nil,
		"cache.refresh.y":       nil,
		"x":                     nil,
	} {
		require.Equal(t, want, nearKeys(key), key)
	}
}
