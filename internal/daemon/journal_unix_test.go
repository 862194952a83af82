//go:build unix

package daemon

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The status page sends a person to journalctl only when standard error
// is the journal itself, not when JOURNAL_STREAM was merely inherited.
func TestStderrIsJournal(t *testing.T) {
	fi, err := os.Stderr.Stat()
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	for _, tc := range []struct {
		name, env string
		want      bool
	}{
		{"no variable", "", false},
		{"inherited, another stream", "1:2", false},
		{"this very stream", fmt.Sprintf("%d:%d", st.Dev, st.Ino), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("JOURNAL_STREAM", tc.env)
			require.Equal(t, tc.want, stderrIsJournal())
			require.Equal(t, !tc.want, logsToTerminal(""))
			require.False(t, logsToTerminal("/var/log/receiptd/receiptd.log"), "a log file is no terminal")
		})
	}
}
