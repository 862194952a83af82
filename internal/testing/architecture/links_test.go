package architecture

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

var (
	// inlineLink is a Markdown inline link's target: [text](target).
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// codeSpan is an inline code span, whose text is not a link.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// linkText keeps a link's text, for a heading's anchor.
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// TestDocLinks checks every relative link of the repository's Markdown
// files: the file it names exists and, for a link into a .md file with a
// #fragment, that file has a heading with that anchor (as GitHub makes
// them). The README reaches every decision through docs/decisions.md, one
// link each; this keeps those links, and the others, from pointing
// nowhere.
func TestDocLinks(t *testing.T) {
	root := moduleRoot(t)
	problems, checked, err := checkLinks(root)
	require.NoError(t, err)
	require.Positive(t, checked, "no links found: is the walk wrong?")
	if len(problems) > 0 {
		t.Errorf("%d broken links:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
}

// checkLinks walks root's Markdown files (skipping what importGraph
// skips) and returns the broken links and how many links it checked.
func checkLinks(root string) (problems []string, checked int, err error) {
	anchors := map[string]map[string]bool{} // by file, read once
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".md") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, target := range links(string(text)) {
			checked++
			if p := checkLink(path, target, anchors); p != "" {
				problems = append(problems, filepath.ToSlash(rel)+": "+p)
			}
		}
		return nil
	})
	return problems, checked, err
}

// links returns the targets of the relative inline links of a Markdown
// text, outside code blocks and code spans.
func links(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, target)
		}
	}
	return out
}

// checkLink says what is wrong with the link target found in file, or "".
func checkLink(file, target string, anchors map[string]map[string]bool) string {
	path, frag, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if _, err := os.Stat(dest); err != nil {
			return fmt.Sprintf("%s: no such file", target)
		}
	}
	if frag == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	if anchors[dest] == nil {
		b, err := os.ReadFile(dest)
		if err != nil {
			return fmt.Sprintf("%s: %v", target, err)
		}
		anchors[dest] = headingAnchors(string(b))
	}
	if !anchors[dest][frag] {
		return fmt.Sprintf("%s: no heading with that anchor", target)
	}
	return ""
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: the heading's text (a link's text only) in lower case,
// without punctuation, spaces made hyphens, and -1, -2 ... added to
// repeats.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		a := anchor(strings.TrimLeft(line, "#"))
		slug := a
		for i := 1; out[slug]; i++ {
			slug = fmt.Sprintf("%s-%d", a, i)
		}
		out[slug] = true
	}
	return out
}

// anchor is GitHub's anchor of one heading's text.
func anchor(heading string) string {
	heading = linkText.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestAnchor pins anchor against headings whose GitHub anchors are known.
func TestAnchor(t *testing.T) {
	for _, tc := range []struct{ name, heading, want string }{
		{"plain", "Known gaps", "known-gaps"},
		{"punctuation", "sync.max_ambiguous: held after 3 ambiguous attempts", "syncmax_ambiguous-held-after-3-ambiguous-attempts"},
		{"apostrophe", "GOMAXPROCS is Go's default", "gomaxprocs-is-gos-default"},
		{"code and parentheses", "Accepting a receipt (`POST /rest/receipt`)", "accepting-a-receipt-post-restreceipt"},
		{"link", "[Lookup cache](decisions/cache.md)", "lookup-cache"},
		{"comma", "Monitoring many tills, and alerts", "monitoring-many-tills-and-alerts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, anchor(tc.heading))
		})
	}
}

// TestCheckLink checks that a link to a missing file or heading is
// reported and a good one is not.
func TestCheckLink(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\n## Twice\n\n## Twice\n\n```\n# not a heading\n```\n"), 0o644))
	from := filepath.Join(dir, "b.md")
	anchors := map[string]map[string]bool{}
	for _, tc := range []struct{ name, target, want string }{
		{"file", "a.md", ""},
		{"anchor", "a.md#twice", ""},
		{"repeated heading", "a.md#twice-1", ""},
		{"missing file", "c.md", "c.md: no such file"},
		{"missing anchor", "a.md#thrice", "a.md#thrice: no heading with that anchor"},
		{"heading in a code block", "a.md#not-a-heading", "a.md#not-a-heading: no heading with that anchor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, checkLink(from, tc.target, anchors))
		})
	}
	require.Equal(t, []string{"a.md", "b.md#x"},
		links("[a](a.md) `[c](c.md)` [web](https://example.com)\n```\n[d](d.md)\n```\n[b](b.md#x)"))
}
