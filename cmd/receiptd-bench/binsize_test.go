package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A small program built here holds package strings' symbols and none of
// opamp-go's. (go test's own binary has no symbol table to read.)
func TestSymbolBytes(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command here (the Windows programs under Wine): symbolBytes runs `go tool nm`")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"),
		[]byte("package main\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\nfunc main() { fmt.Println(strings.ToUpper(\"hi\")) }\n"), 0o600))
	bin := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	file, part, err := symbolBytes(bin, []string{"strings."})
	require.NoError(t, err)
	require.Positive(t, part)
	require.Less(t, part, file)
	_, none, err := symbolBytes(bin, controlPackages)
	require.NoError(t, err)
	require.Zero(t, none)
	_, _, err = symbolBytes(bin+".missing", nil)
	require.Error(t, err)
}
