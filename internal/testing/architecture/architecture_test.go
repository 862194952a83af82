package architecture

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// graph maps a package (its folder relative to the module root, with
// slashes) to the set of the module's packages it imports.
type graph map[string]map[string]bool

func (g graph) add(from string, to ...string) {
	if g[from] == nil {
		g[from] = map[string]bool{}
	}
	for _, t := range to {
		g[from][t] = true
	}
}

// TestDiagramMatchesImports holds ARCHITECTURE.md's map against the code.
func TestDiagramMatchesImports(t *testing.T) {
	root := moduleRoot(t)
	code, err := importGraph(root)
	require.NoError(t, err)
	require.Contains(t, code, "internal/testing/architecture", "the walk must find this package")

	f, err := os.Open(filepath.Join(root, "ARCHITECTURE.md"))
	require.NoError(t, err)
	defer f.Close()
	diagram, order, err := parseDiagram(f)
	require.NoError(t, err, "ARCHITECTURE.md")

	if problems := compare(code, diagram, order); len(problems) > 0 {
		t.Errorf("ARCHITECTURE.md's map and the imports disagree; fix the map (or the import):\n  %s",
			strings.Join(problems, "\n  "))
	}
}

// moduleRoot walks up from the working directory to the folder of go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the working directory")
		dir = parent
	}
}

// modulePath reads the module line of root's go.mod.
func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			if p, err := strconv.Unquote(strings.TrimSpace(rest)); err == nil {
				return p, nil
			}
			return strings.TrimSpace(rest), nil
		}
	}
	return "", errors.New("go.mod has no module line")
}

// importGraph parses the imports of every non-test .go file under root,
// skipping what the go command skips (folders starting with . or _,
// testdata, vendor, and nested modules), and returns the graph of the
// module's own packages.
func importGraph(root string) (graph, error) {
	module, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	g := graph{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		from := filepath.ToSlash(rel)
		g.add(from)
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if to, ok := strings.CutPrefix(p, module+"/"); ok {
				g.add(from, to)
			}
		}
		return nil
	})
	return g, err
}

// diagramName turns a name of the map into a folder: names are folders
// under internal/ unless they start with cmd/ or examples/.
func diagramName(s string) string {
	if strings.HasPrefix(s, "cmd/") || strings.HasPrefix(s, "examples/") {
		return s
	}
	return "internal/" + s
}

// shortName is diagramName's inverse, for messages in the map's terms.
func shortName(s string) string {
	return strings.TrimPrefix(s, "internal/")
}

// parseDiagram reads the first fenced block whose info string is
// "imports". Each line is "name → name, name, ..." (or "->"), a line
// starting with white space continues the previous line's list, a line
// without an arrow lists packages that import nothing of ours, and # starts
// a comment. It returns the graph and the packages in the order they
// appear.
func parseDiagram(r io.Reader) (graph, []string, error) {
	sc := bufio.NewScanner(r)
	g := graph{}
	var order []string
	in, found := false, false
	var last string // the package whose list a continuation line extends
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if !in {
			if trimmed == "```imports" {
				in, found = true, true
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			break
		}
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last == "" {
				return nil, nil, fmt.Errorf("line %d: a continuation without an arrow line before it", n)
			}
			names, err := splitNames(line)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: %w", n, err)
			}
			g.add(last, names...)
			continue
		}
		from, to, arrow := cutArrow(line)
		if !arrow {
			names, err := splitNames(line)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: %w", n, err)
			}
			for _, p := range names {
				if g[p] != nil {
					return nil, nil, fmt.Errorf("line %d: %s is listed twice", n, shortName(p))
				}
				g.add(p)
				order = append(order, p)
			}
			last = ""
			continue
		}
		froms, err := splitNames(from)
		if err != nil || len(froms) != 1 {
			return nil, nil, fmt.Errorf("line %d: one package before the arrow, not %q", n, strings.TrimSpace(from))
		}
		p := froms[0]
		if g[p] != nil {
			return nil, nil, fmt.Errorf("line %d: %s is listed twice", n, shortName(p))
		}
		names, err := splitNames(to)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", n, err)
		}
		g.add(p, names...)
		order = append(order, p)
		last = p
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, nil, errors.New("no ```imports block")
	}
	return g, order, nil
}

// cutArrow splits a line at its arrow (→ or ->).
func cutArrow(line string) (before, after string, found bool) {
	if b, a, ok := strings.Cut(line, "→"); ok {
		return b, a, true
	}
	return strings.Cut(line, "->")
}

// splitNames splits a comma-separated list of package names.
func splitNames(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.ContainsAny(f, " \t") {
			return nil, fmt.Errorf("%q is not a package name (a comma missing?)", f)
		}
		out = append(out, diagramName(f))
	}
	return out, nil
}

// compare lists every disagreement between the code's graph and the
// diagram's, and every arrow of the diagram that points to a package
// listed above its source.
func compare(code, diagram graph, order []string) []string {
	var problems []string
	for _, p := range slices.Sorted(maps.Keys(code)) {
		if diagram[p] == nil {
			problems = append(problems, fmt.Sprintf("package %s is not in the map (it imports: %s)", shortName(p), names(code[p])))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(diagram)) {
		if code[p] == nil {
			problems = append(problems, fmt.Sprintf("the map names %s, which has no non-test Go file", shortName(p)))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(code)) {
		for _, to := range slices.Sorted(maps.Keys(code[p])) {
			if diagram[p] != nil && !diagram[p][to] {
				problems = append(problems, fmt.Sprintf("missing arrow (imported, not drawn): %s → %s", shortName(p), shortName(to)))
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(diagram)) {
		for _, to := range slices.Sorted(maps.Keys(diagram[p])) {
			if code[p] != nil && !code[p][to] {
				problems = append(problems, fmt.Sprintf("extra arrow (drawn, not imported): %s → %s", shortName(p), shortName(to)))
			}
		}
	}
	pos := map[string]int{}
	for i, p := range order {
		pos[p] = i
	}
	for _, p := range slices.Sorted(maps.Keys(diagram)) {
		for _, to := range slices.Sorted(maps.Keys(diagram[p])) {
			if j, ok := pos[to]; ok && j <= pos[p] {
				problems = append(problems, fmt.Sprintf("arrow pointing up the map: %s → %s (list %s below %s, or break the import)",
					shortName(p), shortName(to), shortName(to), shortName(p)))
			}
		}
	}
	return problems
}

// names lists a package's imports in the map's terms.
func names(imports map[string]bool) string {
	if len(imports) == 0 {
		return "nothing of ours"
	}
	var out []string
	for _, p := range slices.Sorted(maps.Keys(imports)) {
		out = append(out, shortName(p))
	}
	return strings.Join(out, ", ")
}
