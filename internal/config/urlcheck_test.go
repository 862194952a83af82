package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestURLProblemInWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, raw string
		schemes   []string
		want      string // "" for a URL that passes
	}{
		{"loopback", "http://127.0.0.1:7081", nil, ""},
		{"https with path", "https://api.ebarimt.mn/base", nil, ""},
		{"ipv6 loopback", "http://[::1]:7081", nil, ""},
		{"no scheme", "127.0.0.1:7081", nil, `needs http:// or https:// in front, like "http://127.0.0.1:7081", not "127.0.0.1:7081"`},
		{"host only", "api.ebarimt.mn", nil, "needs http:// or https:// in front"},
		{"port out of range", "http://127.0.0.1:70812", nil, "port 70812 is out of range: a port is a number from 1 to 65535"},
		{"port zero", "http://127.0.0.1:0", nil, "port 0 is out of range"},
		{"port not a number", "http://127.0.0.1:70x1", nil, `port "70x1" is not a number`},
		{"colon without port", "http://127.0.0.1:/", nil, `has a ":" after the host but no port number`},
		{"wrong scheme", "ftp://posapi/", nil, `needs http:// or https:// in front, not "ftp://"`},
		{"proxy schemes", "gopher://p", []string{"http", "https", "socks5"}, "needs http://, https:// or socks5:// in front"},
		{"socks5 proxy", "socks5://127.0.0.1:1080", []string{"http", "https", "socks5"}, ""},
		{"no host", "http:///rest", nil, "needs a host name or address"},
		{"credentials", "http://user:pw@127.0.0.1:7081", nil, "must not carry a user name or password"},
		{"query", "http://127.0.0.1:7081/?a=1", nil, "must not carry a query"},
		{"space", "http://127.0.0.1:7081/a b", nil, "must not contain spaces"},
		{"empty", "", nil, "must be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, problem := URLProblem(tc.raw, tc.schemes...)
			if tc.want == "" {
				require.Empty(t, problem)
				require.NotNil(t, u)
				return
			}
			require.Nil(t, u)
			require.Contains(t, problem, tc.want)
		})
	}
}

// Every URL key goes through URLProblem: the same words whatever the key.
func TestEveryURLKeySaysPortOutOfRange(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"upstream.base_url", "upstream.lookup_base_url", "upstream.stock_base_url",
		"upstream.proxy", "fleet.remote_write_url", "fleet.proxy"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			table, name := key[:len("upstream")], key[len("upstream."):]
			if key[:5] == "fleet" {
				table, name = "fleet", key[len("fleet."):]
			}
			_, err := load(writeConfig(t, "["+table+"]\n"+name+" = \"http://127.0.0.1:70812\"\n"), nil)
			require.ErrorContains(t, err, key+": port 70812 is out of range")
		})
	}
}

func TestLiveLookups(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		u    func(*Upstream)
		want []string
	}{
		{"defaults: PosAPI here, lookups on the internet", func(*Upstream) {}, []string{
			"upstream.lookup_base_url (https://api.ebarimt.mn)", "upstream.stock_base_url (https://service.itc.gov.mn)"}},
		{"all on the simulator", func(u *Upstream) { u.LookupBaseURL, u.StockBaseURL = u.BaseURL, "http://127.0.0.1:7081" }, nil},
		{"localhost is not trusted as loopback", func(u *Upstream) { u.LookupBaseURL, u.StockBaseURL = u.BaseURL, "http://localhost:7081" }, []string{"upstream.stock_base_url (http://localhost:7081)"}},
		{"one left live", func(u *Upstream) { u.LookupBaseURL = u.BaseURL }, []string{"upstream.stock_base_url (https://service.itc.gov.mn)"}},
		{"PosAPI on another machine", func(u *Upstream) { u.BaseURL = "http://10.0.0.5:7080" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := Default().Upstream
			tc.u(&u)
			require.Equal(t, tc.want, u.LiveLookups())
		})
	}
}

func TestFollowBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		u        func(*Upstream)
		warnKeys []string
	}{
		{"live defaults follow silently", func(*Upstream) {}, nil},
		{"already loopback", func(u *Upstream) { u.LookupBaseURL = "http://127.0.0.1:9999" }, nil},
		{"a mix on purpose is named", func(u *Upstream) { u.StockBaseURL = "https://stock.example" }, []string{"upstream.stock_base_url"}},
		{"both named", func(u *Upstream) { u.LookupBaseURL, u.StockBaseURL = "https://l.example", "https://s.example" },
			[]string{"upstream.lookup_base_url", "upstream.stock_base_url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := Default().Upstream
			u.BaseURL = "http://127.0.0.1:40001"
			tc.u(&u)
			warnings := u.FollowBaseURL()
			require.Len(t, warnings, len(tc.warnKeys))
			for i, k := range tc.warnKeys {
				require.Contains(t, warnings[i], k)
			}
			require.Equal(t, u.BaseURL, u.LookupBaseURL)
			require.Equal(t, u.BaseURL, u.StockBaseURL)
			require.Empty(t, u.LiveLookups())
		})
	}
}

// LookupNote is config check's note: live defaults are a note, a key set
// elsewhere on purpose a warning naming it, nothing when all stay here.
func TestLookupNote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		u     func(*Upstream)
		lines []string // a line each, in order, by its start
	}{
		{"both at the live default", func(*Upstream) {}, []string{
			"note: upstream.base_url (http://127.0.0.1:7081) is on this computer; upstream.lookup_base_url (https://api.ebarimt.mn) " +
				"and upstream.stock_base_url (https://service.itc.gov.mn) are at the live default.", "  If base_url", "  nothing leaves"}},
		{"one set elsewhere", func(u *Upstream) { u.StockBaseURL = "https://stock.example" }, []string{
			"note: upstream.base_url (http://127.0.0.1:7081) is on this computer; upstream.lookup_base_url (https://api.ebarimt.mn) is at the live default.",
			"  If base_url", "  nothing leaves",
			"warning: upstream.stock_base_url (https://stock.example) is set to reach the internet while upstream.base_url (http://127.0.0.1:7081) is on this computer:",
			"  receiptd asks it even when base_url is receiptd's simulator. Remove the key to let the lookups follow the simulator."}},
		{"both set elsewhere", func(u *Upstream) { u.LookupBaseURL, u.StockBaseURL = "https://l.example", "https://s.example" }, []string{
			"warning: upstream.lookup_base_url (https://l.example) and upstream.stock_base_url (https://s.example) are set",
			"  receiptd asks them even when base_url is receiptd's simulator. Remove the keys"}},
		{"all on the simulator", func(u *Upstream) { u.LookupBaseURL, u.StockBaseURL = u.BaseURL, u.BaseURL }, nil},
		{"PosAPI on another machine", func(u *Upstream) { u.BaseURL = "http://10.0.0.5:7080" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := Default().Upstream
			u.BaseURL = "http://127.0.0.1:7081"
			tc.u(&u)
			got := u.LookupNote()
			require.Len(t, got, len(tc.lines), "%q", got)
			for i, start := range tc.lines {
				require.True(t, strings.HasPrefix(got[i], start), "line %d: %q, want it to start %q", i, got[i], start)
			}
		})
	}
}
