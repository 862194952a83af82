package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLeafKeysOf: the keys a fragment sets are those no other key is
// below, tables opened on the way left out, whatever their depth.
func TestLeafKeysOf(t *testing.T) {
	lines := map[string]int{
		"accept": 1, "accept.wait": 2, "accept.queued_answer": 3,
		"fleet": 4, "fleet.labels": 5, "fleet.labels.shop": 6, "fleet.labels.till": 7,
		"fleet.interval": 8, "log.level": 9, "sync": 10,
		// a prefix of another key's name but not a table above it
		"accept.wait_more": 11,
	}
	require.Equal(t, []string{
		"accept.queued_answer", "accept.wait", "accept.wait_more", "fleet.interval",
		"fleet.labels.shop", "fleet.labels.till", "log.level", "sync",
	}, leafKeysOf(lines))
}

// TestMergeRefusesAnOversizedFragment: a fragment of thousands of keys,
// or of thousands of lines, is refused whole, before any key is looked at
// (each key's line costs a pass over the fragment, so keys times lines is
// what a head office could make a till spend), and says the bound.
func TestMergeRefusesAnOversizedFragment(t *testing.T) {
	own := writeConfig(t, ownFile)
	for _, c := range []struct {
		name     string
		fragment []byte
		want     string
	}{
		{"labels", labelsFragment(2000), "the fragment sets 2001 keys and tables; at most 512 are read"},
		{"lines", []byte(strings.Repeat("# padding\n", 20000) + "[accept]\nqueued_answer = \"error\"\n"), "the fragment has 20003 lines; at most 10000 are read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := merge(Default(), own, c.fragment, nil)
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Len(t, e.Problems, 1, "%v", err)
			require.Contains(t, e.Problems[0].Problem, c.want)
		})
	}
	_, err := merge(Default(), own, labelsFragment(maxFragmentKeys-1), nil)
	var e *Error
	if errors.As(err, &e) {
		for _, p := range e.Problems {
			require.NotContains(t, p.Problem, "are read", "a fragment at the bound is read")
		}
	}
}

// labelsFragment is a fragment setting n fleet labels, the shape of the
// issue's finding (4,000 labels took 0.9 s to merge, 16,000 took 27.9 s).
func labelsFragment(n int) []byte {
	var b strings.Builder
	b.WriteString("[fleet.labels]\n")
	for i := range n {
		fmt.Fprintf(&b, "l%05d = \"v\"\n", i)
	}
	return []byte(b.String())
}

// BenchmarkMergeLabels merges fragments of 500, 4,000 and 16,000 keys
// (fleet labels, and as many unknown keys, each a problem): 500 are read
// key by key, the others refused after one pass over the fragment, so no
// fragment costs more than a few of a whole configuration. Run:
//
//	go test -run '^$' -bench BenchmarkMergeLabels -benchtime 3x ./internal/config/
func BenchmarkMergeLabels(b *testing.B) {
	own := filepath.Join(b.TempDir(), "config.toml")
	require.NoError(b, os.WriteFile(own, []byte(ownFile), 0o600))
	for _, n := range []int{500, 4000, 16000} {
		labels := labelsFragment(n)
		unknown := []byte(strings.ReplaceAll(string(labels), "[fleet.labels]", "[accept]"))
		b.Run(fmt.Sprintf("labels=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, _ = merge(Default(), own, labels, nil)
			}
		})
		b.Run(fmt.Sprintf("unknown=%d", n), func(b *testing.B) {
			for b.Loop() {
				_, _ = merge(Default(), own, unknown, nil)
			}
		})
	}
}

// TestMergeOntoKeepsWhatTheBaseSet: a till without a file of its own
// (receiptd demo: its data directory, listen address and simulator made
// in code) lays a fragment over those settings, not over the defaults; a
// fragment naming sync.concurrency changes that and nothing else. Merge
// over the defaults would move such a till to the default data_dir, which
// the daemon refuses in place.
func TestMergeOntoKeepsWhatTheBaseSet(t *testing.T) {
	t.Parallel()
	base := Default()
	base.DataDir = filepath.Join(t.TempDir(), "demo")
	base.Listen = "127.0.0.1:7390"
	base.Upstream.BaseURL = "http://127.0.0.1:7391"
	m, err := MergeOnto(base, "", []byte("[sync]\nconcurrency = 3\n"))
	require.NoError(t, err)
	require.Equal(t, base.DataDir, m.Config.DataDir)
	require.Equal(t, base.Listen, m.Config.Listen)
	require.Equal(t, base.Upstream.BaseURL, m.Config.Upstream.BaseURL)
	require.Equal(t, 3, m.Config.Sync.Concurrency)
	require.Equal(t, []string{"sync.concurrency"}, m.RemoteKeys)

	blank, err := MergeOnto(base, "", nil)
	require.NoError(t, err)
	require.Equal(t, base.DataDir, blank.Config.DataDir, "an empty fragment gives the base back")
}
