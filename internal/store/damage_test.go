package store

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDescribeDamage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		problems []any
		want     string
	}{
		{"a panic while reading a page", []any{"assertion failed: Page expected to be: 68, but self identifies as 0"},
			"the first damaged page is page 68: it does not hold what the database's tree expects there " +
				"(it was overwritten, zeroed or written elsewhere)"},
		{"the check's errors: the lowest page first", []any{
			errors.New("page 90: unreachable unfreed"),
			errors.New("panic: assertion failed: Page expected to be: 16, but self identifies as 0"),
			errors.New("page 17: multiple references (stack: [3 4])"),
		}, "the first damaged page is page 16: it does not hold what the database's tree expects there " +
			"(it was overwritten, zeroed or written elsewhere) (3 problems found)"},
		{"a garbled header", []any{"assertion failed: page 5: has unexpected type/flags: 0"},
			"the first damaged page is page 5: its header is garbled (a type no page has)"},
		{"past the end", []any{"pgid (700) above high water mark (40)"},
			"the first damaged page is page 700: the database's tree points past the end of the file"},
		{"no page named: bbolt's text without its panic", []any{"panic: assertion failed: read: zero-length inode key"},
			"a page could not be read: read: zero-length inode key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := describeDamage(len(tc.problems), tc.problems...)
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "panic")
			require.NotContains(t, got, "assertion")
		})
	}
}

// Check keeps the first 10 problems bbolt reports; the count says how many
// it found in all.
func TestDescribeDamageCountsEveryProblemFound(t *testing.T) {
	t.Parallel()
	got := describeDamage(25, errors.New("page 41: unreachable unfreed"), errors.New("page 40: unreachable unfreed"))
	require.Equal(t, "the first damaged page is page 40: it is neither in use nor listed as free (25 problems found)", got)
}
