package jsonscan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Keys match as encoding/json matches them to a struct's fields: exactly
// first, then with case folded (Unicode simple folding), escapes read.
func TestFieldMatchesAsEncodingJSON(t *testing.T) {
	t.Parallel()
	names := []string{"status", "id", "Id"}
	for key, want := range map[string]int{
		`"status"`:       0,
		`"STATUS"`:       0,
		`"ſtatus"`:       0, // U+017F folds to s
		`"\u0073tatus"`:  0,
		`"id"`:           1,
		`"Id"`:           2, // exact before folded
		`"ID"`:           1, // folded: the first name that matches
		`"statuses"`:     -1,
		`"\"status\""`:   -1,
		`"stat\u0075s "`: -1,
	} {
		require.Equal(t, want, Field([]byte(key), names), key)
	}
}

// Members and Elements give each member and element as written, nested
// values whole, strings with escaped quotes and brackets skipped.
func TestMembersAndElements(t *testing.T) {
	t.Parallel()
	var got []string
	Members([]byte(`{ "a" : [1, {"b":"]}\""}] , "c":"x\"y" ,"d":null,"e":-1.5e3 }`), func(key, v []byte) {
		got = append(got, string(key)+"="+string(v))
	})
	require.Equal(t, []string{`"a"=[1, {"b":"]}\""}]`, `"c"="x\"y"`, `"d"=null`, `"e"=-1.5e3`}, got)
	got = nil
	Elements([]byte(`[ "x" ,{"y":[]},true , 0 ]`), func(v []byte) { got = append(got, string(v)) })
	require.Equal(t, []string{`"x"`, `{"y":[]}`, `true`, `0`}, got)
}
