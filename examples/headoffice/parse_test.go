package main

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/update/updatetest"
)

func TestParseWaves(t *testing.T) {
	for name, c := range map[string]struct {
		in    string
		sizes []int // for 40 tills selected; -1: all
		err   string
	}{
		"the default":             {"", []int{1, 5, -1}, ""},
		"as the default":          {"1,5,all", []int{1, 5, -1}, ""},
		"a percentage":            {"1, 5%, all", []int{1, 2, -1}, ""},
		"all is implied":          {"2,10", []int{2, 10, -1}, ""},
		"all at once":             {"all", []int{-1}, ""},
		"a percentage of few":     {"1%", []int{1, -1}, ""},
		"none":                    {"0,all", nil, `wave 1 is "0"`},
		"negative":                {"-1", nil, `wave 1 is "-1"`},
		"a word":                  {"1,some", nil, `wave 2 is "some"`},
		"a sign":                  {"+3", nil, `wave 1 is "+3"`},
		"over a hundred percent":  {"101%", nil, "more than 100%"},
		"all before another":      {"all,1", nil, `"all" is the last wave`},
		"an empty wave":           {"1,,all", nil, `wave 2 is ""`},
		"too many":                {strings.Repeat("1,", maxWaves) + "all", nil, "at most 20"},
		"a percent sign alone":    {"%", nil, `wave 1 is "%"`},
		"a number with a decimal": {"1.5", nil, `wave 1 is "1.5"`},
	} {
		t.Run(name, func(t *testing.T) {
			ws, err := parseWaves(c.in)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				require.Nil(t, ws)
				return
			}
			require.NoError(t, err)
			var sizes []int
			for _, w := range ws {
				n := w.size(40)
				if w.all {
					n = -1
				}
				sizes = append(sizes, n)
			}
			require.Equal(t, c.sizes, sizes)
		})
	}
}

// FuzzParseWaves: whatever an admin sends, parseWaves either refuses it
// or returns at most maxWaves+1 waves that each take at least one till and
// end with "all", which only the last is.
func FuzzParseWaves(f *testing.F) {
	for _, s := range []string{"", "1,5,all", "1,5%,all", "all", "0", "101%", "1,,2", "all,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws, err := parseWaves(s)
		if err != nil {
			return
		}
		require.NotEmpty(t, ws)
		require.LessOrEqual(t, len(ws), maxWaves+1)
		for i, w := range ws {
			require.Equal(t, i == len(ws)-1, w.all, "only the last wave is all: %q", s)
			require.GreaterOrEqual(t, w.size(0), 1)
		}
	})
}

// minisig is a .minisig file as minisign writes it, for comment.
func minisig(t testing.TB, comment string) []byte {
	return updatetest.NewSigner(t).Sign([]byte("a release"), comment)
}

func TestSignedComment(t *testing.T) {
	good := minisig(t, "receiptd 1.4.0 linux/amd64")
	lines := strings.Split(string(good), "\n")
	legacy := func() []byte {
		raw, err := base64.StdEncoding.DecodeString(lines[1])
		require.NoError(t, err)
		raw[1] = 'd'
		l := append([]string{}, lines...)
		l[1] = base64.StdEncoding.EncodeToString(raw)
		return []byte(strings.Join(l, "\n"))
	}()
	for name, c := range map[string]struct {
		sig     []byte
		comment string
		err     string
	}{
		"as minisign writes it": {good, "receiptd 1.4.0 linux/amd64", ""},
		"with CRLF line ends":   {bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")), "receiptd 1.4.0 linux/amd64", ""},
		"legacy":                {legacy, "", "legacy minisign signature"},
		"three lines":           {[]byte(strings.Join(lines[:3], "\n")), "", "4 lines, this one 3"},
		"no untrusted comment":  {[]byte(strings.Join(append([]string{"comment: x"}, lines[1:]...), "\n")), "", "line 1"},
		"a short signature":     {[]byte(strings.Join([]string{lines[0], "RWQ=", lines[2], lines[3]}, "\n")), "", "line 2"},
		"no trusted comment":    {[]byte(strings.Join([]string{lines[0], lines[1], "receiptd 1.4.0 linux/amd64", lines[3]}, "\n")), "", "line 3"},
		"no comment signature":  {[]byte(strings.Join([]string{lines[0], lines[1], lines[2], "x"}, "\n")), "", "line 4"},
		"too large":             {bytes.Repeat([]byte("x"), maxSignature+1), "", "over 8192 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := signedComment(c.sig)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.comment, got)
		})
	}
}

func TestParseComment(t *testing.T) {
	for name, c := range map[string]struct {
		in, version, platform, err string
	}{
		"receiptd's":            {"receiptd 1.4.0 linux/amd64", "1.4.0", "linux/amd64", ""},
		"a pre-release":         {"receiptd 1.4.0-rc.1 windows/arm64", "1.4.0-rc.1", "windows/arm64", ""},
		"minisign's default":    {"timestamp:1700000000\tfile:receiptd\thashed", "", "", "not \"receiptd <version>"},
		"another program":       {"posd 1.4.0 linux/amd64", "", "", "not \"receiptd <version>"},
		"no platform":           {"receiptd 1.4.0", "", "", "not \"receiptd <version>"},
		"two spaces":            {"receiptd  1.4.0 linux/amd64", "", "", "not \"receiptd <version>"},
		"a platform of one":     {"receiptd 1.4.0 linux", "", "", "platform is \"linux\""},
		"a platform of three":   {"receiptd 1.4.0 linux/amd64/v3", "", "", "platform is"},
		"a platform without os": {"receiptd 1.4.0 /amd64", "", "", "platform is"},
	} {
		t.Run(name, func(t *testing.T) {
			v, p, err := parseComment(c.in)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{c.version, c.platform}, []string{v, p})
		})
	}
}

// FuzzSignedComment: any bytes given as a .minisig are refused or give a
// one-line comment, and a comment parseComment takes names a version and
// a goos/goarch without spaces.
func FuzzSignedComment(f *testing.F) {
	f.Add(minisig(f, "receiptd 1.4.0 linux/amd64"))
	f.Add(minisig(f, "receiptd 1.4.0"))
	f.Add([]byte("untrusted comment: x\nRWQ=\ntrusted comment: receiptd 1 a/b\n\n"))
	f.Fuzz(func(t *testing.T, sig []byte) {
		c, err := signedComment(sig)
		if err != nil {
			return
		}
		require.NotContains(t, c, "\n")
		v, p, err := parseComment(c)
		if err != nil {
			return
		}
		require.Equal(t, "receiptd "+v+" "+p, c)
		require.NotContains(t, v+p, " ")
		require.Equal(t, 1, strings.Count(p, "/"))
	})
}
