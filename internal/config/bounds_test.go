package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryBoundIsAKey: a bound names a key of Config holding a Duration,
// a number or a map, once, and the defaults are within every bound.
func TestEveryBoundIsAKey(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, b := range Bounds {
		require.False(t, seen[b.Key], "%s bound twice", b.Key)
		seen[b.Key] = true
		require.Contains(t, leafKeys(), b.Key)
		require.NotPanics(t, func() { b.value(Default()) }, b.Key)
		require.Empty(t, b.problem(Default(), true), "the default of %s is out of its remote bound", b.Key)
		require.True(t, b.Max == 0 || b.Max >= b.Min, b.Key)
		require.NotEmpty(t, b.Why, b.Key)
	}
}

// TestBoundsTableIsTheContract: docs/contract.md's table of safe bounds is
// BoundsTable, so the doc and the checks cannot differ.
// RECEIPTD_WRITE_DOCS=1 writes it.
func TestBoundsTableIsTheContract(t *testing.T) {
	const path = "../../docs/contract.md"
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	const begin, end = "<!-- bounds: begin (internal/config/bounds.go) -->\n", "<!-- bounds: end -->\n"
	before, rest, ok := strings.Cut(string(doc), begin)
	require.True(t, ok, "%s has no %q", path, begin)
	table, after, ok := strings.Cut(rest, end)
	require.True(t, ok, "%s has no %q", path, end)
	if os.Getenv("RECEIPTD_WRITE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(path, []byte(before+begin+BoundsTable()+end+after), 0o644))
		return
	}
	require.Equal(t, BoundsTable(), table, "run RECEIPTD_WRITE_DOCS=1 go test ./internal/config -run TestBoundsTableIsTheContract")
}
