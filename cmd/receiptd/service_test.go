package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/service"
)

// The Windows service's default log file goes to its logger only: the
// config the daemon runs on (and a head office's fragment is compared
// with) stays as the file says.
func TestServiceLogConfig(t *testing.T) {
	cfg := config.Default()
	for _, tc := range []struct {
		name, goos, file, want string
	}{
		{"windows, no log.file: the default file", "windows", "", service.DefaultLogFile()},
		{"windows, log.file set: kept", "windows", `D:\logs\r.log`, `D:\logs\r.log`},
		{"linux, no log.file: the journal", "linux", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cfg.Log
			in.File = tc.file
			require.Equal(t, tc.want, serviceLog(in, tc.goos).File)
		})
	}
}
