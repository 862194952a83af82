package receipt

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	integrationDoc = "../../docs/pos-integration.md"
	tableBegin     = "<!-- rules table: generated from internal/receipt/rules.go by TestRulesTableIsTheDocs -->\n"
	tableEnd       = "<!-- end of the rules table -->\n"
)

// rulesTable renders the rules and the waivers as the Markdown of
// docs/pos-integration.md.
func rulesTable() string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	cites := func(cs []Cite) string {
		var parts []string
		for _, c := range cs {
			parts = append(parts, "["+c.File+"](reference/"+c.File+"): "+cell(strings.Join(strings.Fields(c.Quote), " ")))
		}
		return strings.Join(parts, "; ")
	}
	var b strings.Builder
	b.WriteString(tableBegin)
	b.WriteString("\n| Rule | Field | Refused unless | Problem | Whose word | Evidence |\n|---|---|---|---|---|---|\n")
	for _, r := range rules {
		name := "`" + r.Name + "`"
		if r.Fixed != "" {
			name += " (cannot be skipped: " + r.Fixed + ")"
		}
		b.WriteString("| " + name + " | `" + r.Path + "` | " + cell(r.Check) + " | " + cell(r.Problem) +
			" | " + r.Source + " | " + cites(r.Evidence) + " |\n")
	}
	b.WriteString("\nWhat the description demands and receiptd does not refuse, because the live service takes it:\n\n")
	b.WriteString("| Field | The description | Not refused, because | Evidence |\n|---|---|---|---|\n")
	for _, w := range waivers {
		b.WriteString("| `" + w.Path + "` | " + cell(w.Demand) + " | " + cell(w.Why) + " | " + cites(w.Evidence) + " |\n")
	}
	b.WriteString("\n" + tableEnd)
	return b.String()
}

// TestRulesTableIsTheDocs: the table of rules in docs/pos-integration.md
// is the one rules.go holds. RECEIPTD_WRITE_DOCS=1 writes it there.
func TestRulesTableIsTheDocs(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(integrationDoc)
	require.NoError(t, err)
	doc := string(b)
	start, end := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	require.True(t, start >= 0 && end > start, "docs/pos-integration.md has no rules table between its markers")
	want := rulesTable()
	got := doc[start : end+len(tableEnd)]
	if os.Getenv("RECEIPTD_WRITE_DOCS") == "1" && got != want {
		require.NoError(t, os.WriteFile(integrationDoc, []byte(doc[:start]+want+doc[end+len(tableEnd):]), 0o644))
		return
	}
	require.Equal(t, want, got, "the rules table in docs/pos-integration.md differs from rules.go (RECEIPTD_WRITE_DOCS=1 writes it)")
}
