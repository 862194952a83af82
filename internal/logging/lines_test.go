package logging

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLinesPassAChildsLogWhole: lines written through Options.Lines in
// pieces reach the file whole, never cut by the logger's own entry
// written meanwhile; a line longer than the bound is written anyway.
func TestLinesPassAChildsLogWhole(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.log")
	var lines io.Writer
	log, closeLog, err := New(Options{File: path, Lines: &lines})
	require.NoError(t, err)
	require.NotNil(t, lines)
	_, err = lines.Write([]byte(`{"msg":"the child`))
	require.NoError(t, err)
	log.Info("the parent")
	_, err = io.WriteString(lines, " is ready\"}\n{\"msg\":\"and serves\"}\n{\"msg\":\"long ")
	require.NoError(t, err)
	_, err = io.WriteString(lines, strings.Repeat("x", maxPartial)+"\"}\n")
	require.NoError(t, err)
	require.NoError(t, closeLog())

	got := readLines(t, path)
	require.Len(t, got, 4)
	require.Equal(t, "the parent", got[0]["msg"])
	require.Equal(t, "the child is ready", got[1]["msg"])
	require.Equal(t, "and serves", got[2]["msg"])
	require.Len(t, got[3]["msg"], len("long ")+maxPartial)
}
