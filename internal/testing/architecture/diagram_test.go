package architecture

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseDiagram checks the reading of the map's syntax.
func TestParseDiagram(t *testing.T) {
	for _, tc := range []struct {
		name    string
		block   string
		want    graph
		order   []string
		wantErr string
	}{
		{
			name:  "arrows, continuation, leaves and comments",
			block: "cmd/x → api, # the API\n        store\napi -> store\n\n# leaves\nstore, client\n",
			want: graph{"cmd/x": {"internal/api": true, "internal/store": true}, "internal/api": {"internal/store": true},
				"internal/store": {}, "internal/client": {}},
			order: []string{"cmd/x", "internal/api", "internal/store", "internal/client"},
		},
		{name: "listed twice", block: "api → store\napi → client\n", wantErr: "line 4: api is listed twice"},
		{name: "leaf listed twice", block: "store\nstore\n", wantErr: "line 4: store is listed twice"},
		{name: "continuation first", block: "  store\n", wantErr: "line 3: a continuation"},
		{name: "missing comma", block: "api → store client\n", wantErr: "not a package name"},
		{name: "two before the arrow", block: "api, cache → store\n", wantErr: "one package before the arrow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The block starts on line 3 of the file.
			g, order, err := parseDiagram(strings.NewReader("# map\n```imports\n" + tc.block + "```\nafter → x\n"))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, g)
			require.Equal(t, tc.order, order)
		})
	}
	_, _, err := parseDiagram(strings.NewReader("```\napi → store\n```\n"))
	require.ErrorContains(t, err, "no ```imports block")
}

// TestCompare checks that every kind of disagreement is reported, in both
// directions, and agreement is not.
func TestCompare(t *testing.T) {
	diagram := graph{"cmd/x": {"internal/api": true}, "internal/api": {"internal/store": true}, "internal/store": {}}
	order := []string{"cmd/x", "internal/api", "internal/store"}
	for _, tc := range []struct {
		name  string
		code  graph
		order []string
		want  []string
	}{
		{name: "agree", code: diagram, order: order},
		{name: "import not drawn",
			code: graph{"cmd/x": {"internal/api": true, "internal/store": true}, "internal/api": {"internal/store": true}, "internal/store": {}},
			want: []string{"missing arrow (imported, not drawn): cmd/x → store"}},
		{name: "arrow not imported",
			code: graph{"cmd/x": {"internal/api": true}, "internal/api": {}, "internal/store": {}},
			want: []string{"extra arrow (drawn, not imported): api → store"}},
		{name: "package not drawn",
			code: graph{"cmd/x": {"internal/api": true}, "internal/api": {"internal/store": true}, "internal/store": {}, "internal/new": {}},
			want: []string{"package new is not in the map (it imports: nothing of ours)"}},
		{name: "package drawn, gone",
			code: graph{"cmd/x": {"internal/api": true}, "internal/api": {}},
			want: []string{"the map names store, which has no non-test Go file",
				"extra arrow (drawn, not imported): api → store"}},
		{name: "arrow up the map", code: diagram, order: []string{"cmd/x", "internal/store", "internal/api"},
			want: []string{"arrow pointing up the map: api → store (list store below api, or break the import)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.order
			if o == nil {
				o = order
			}
			require.Equal(t, tc.want, compare(tc.code, diagram, o))
		})
	}
}
