package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 40: `receiptd sim -h` says that PUT /sim/faults changes only the
// faults it names, and how to clear them all.
func TestSimHelpDocumentsFaultRoutes(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, "sim", "-h")
	require.Equal(t, exitOK, code)
	require.Contains(t, stderr, "PUT    /sim/faults   change only the faults the body names; the others stay")
	require.Contains(t, stderr, "DELETE /sim/faults   clear them all")
}
