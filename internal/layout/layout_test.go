package layout

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKeptSuffix: a kept name carries the UTC time whatever the zone of the
// clock that stamped it, and KeptGlob finds it.
func TestKeptSuffix(t *testing.T) {
	t.Parallel()
	ulaanbaatar := time.FixedZone("ULAT", 8*3600)
	at := time.Date(2026, 11, 26, 18, 15, 0, 0, ulaanbaatar)
	suffix := KeptSuffix(Damaged, at)
	require.Equal(t, ".damaged-20261126T101500Z", suffix)

	db := DB(filepath.Join("var", "lib", "receiptd"))
	ok, err := filepath.Match(KeptGlob(db, Damaged), db+suffix)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = filepath.Match(KeptGlob(db, BeforeRestore), db+suffix)
	require.NoError(t, err)
	require.False(t, ok, "a glob for one reason does not match another's")
}

// TestDocDrawsEveryName holds the package doc's tree against the names:
// every exported string constant of the package appears in it, so a name
// added without drawing it fails here.
func TestDocDrawsEveryName(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var files []*ast.File
	var doc string
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
	}
	require.NotEmpty(t, doc)
	// The constants need no import to be evaluated, and the go command
	// the source importer runs is not there when the tests run as Windows
	// programs: the imports are left empty and their errors ignored.
	conf := types.Config{Importer: emptyImports{}, Error: func(error) {}}
	pkg, _ := conf.Check("layout", fset, files, nil)
	drawn := 0
	for _, n := range pkg.Scope().Names() {
		c, ok := pkg.Scope().Lookup(n).(*types.Const)
		if !ok || !c.Exported() || c.Val().Kind() != constant.String {
			continue
		}
		drawn++
		require.True(t, strings.Contains(doc, constant.StringVal(c.Val())),
			"the package doc does not draw %s (%s)", n, c.Val())
	}
	require.GreaterOrEqual(t, drawn, 10, "the walk found the names")
}

// TestVersion: a release's folder is its version and 12 hex digits of its
// hash, under versions/.
func TestVersion(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("var", "lib", "receiptd")
	require.Equal(t, filepath.Join(dir, "versions", "1.4.0-3f2a9c81d0e7", "receiptd"),
		Version(dir, "1.4.0", "3f2a9c81d0e7aa55bb", VersionExe))
	require.Equal(t, filepath.Join(dir, "update.json"), Update(dir))
}

// emptyImports gives every import as an empty package.
type emptyImports struct{}

func (emptyImports) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, filepath.Base(path))
	p.MarkComplete()
	return p, nil
}
