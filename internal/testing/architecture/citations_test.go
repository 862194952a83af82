package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	// citation is a section named in prose by its file and heading:
	// `docs/operations.md, "One PosAPI for many tills"` or `README,
	// "Trying it"` (a README without .md is the Markdown one).
	citation = regexp.MustCompile(`((?:[\w.-]+/)*(?:README|[\w.-]+\.md))(?:\.md)?,?\s+"([^"\n]{3,100})"`)
	// commentLead is what starts a comment line in the files searched.
	commentLead = regexp.MustCompile(`^\s*(?://+|#+)?\s*`)
)

// TestSectionCitations checks the sections that comments, examples and
// docs name in words rather than by a link (`README, "Trying it"`): the
// file exists, from the repository's root or beside the citing file, and
// has a heading of that text. Such a citation outlives a rename of the
// heading silently otherwise (examples/demo's files named README sections
// that no longer existed).
func TestSectionCitations(t *testing.T) {
	root := moduleRoot(t)
	var problems []string
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "vendor" || name == "testdata" || filepath.ToSlash(rel) == "docs/reference") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".toml", ".md", ".sh", ".yml", ".yaml", ".wxs":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range citations(string(b)) {
			checked++
			if p := checkCitation(root, path, c[0], c[1]); p != "" {
				problems = append(problems, filepath.ToSlash(rel)+": "+p)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, checked, "no citations found: is the pattern wrong?")
	if len(problems) > 0 {
		t.Errorf("%d citations name no section:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
}

// citations returns the (file, heading) pairs a text names, its comment
// lines joined into prose first, so a citation broken over two lines is
// found whole.
func citations(text string) [][2]string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = commentLead.ReplaceAllString(l, "")
	}
	var out [][2]string
	for _, m := range citation.FindAllStringSubmatch(strings.Join(lines, " "), -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// checkCitation says what is wrong with the citation of heading in file
// (as written in the file at path), or "".
func checkCitation(root, path, file, heading string) string {
	if !strings.HasSuffix(file, ".md") {
		file += ".md"
	}
	for _, dir := range []string{root, filepath.Dir(path)} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
		if err != nil {
			continue
		}
		want := anchor(heading)
		for a := range headingAnchors(string(b)) {
			// "Local API" names "Local API (HTTP/1.1 + JSON)".
			if a == want || strings.HasPrefix(a, want+"-") {
				return ""
			}
		}
		return file + `, "` + heading + `": no such heading`
	}
	return file + `, "` + heading + `": no such file`
}

// TestCitations pins what counts as a citation.
func TestCitations(t *testing.T) {
	require.Equal(t, [][2]string{
		{"README", "Trying the head office push"},
		{"docs/operations.md", "One PosAPI for many tills"},
		{"docs/contract.md", "Managing the fleet"},
	}, citations("## started with a flag (README, \"Trying the\n## head office push\"). Nothing.\n"+
		"// see docs/operations.md, \"One PosAPI for many tills\"\n"+
		"x docs/contract.md \"Managing the fleet\" defines it\n"))
}
