package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// Issue 32, point 6: `config check FILE` is what a newcomer types.
func TestConfigCheckTakesTheFileAsAnArgument(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	sim := writeFile(t, "sim.toml", "data_dir = "+quote(t.TempDir())+"\n[upstream]\n"+
		"base_url = \"http://127.0.0.1:7081\"\nlookup_base_url = \"http://127.0.0.1:7081\"\nstock_base_url = \"http://127.0.0.1:7081\"\n")
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		stdout   string
		stderrIn string
	}{
		{"file as argument", []string{"config", "check", sim}, exitOK, "ok: " + sim + "\n", ""},
		{"file as -config", []string{"config", "check", "-config", sim}, exitOK, "ok: " + sim + "\n", ""},
		{"both", []string{"config", "check", "-config", sim, sim}, exitUsage, "", "give the file once"},
		{"two files", []string{"config", "check", sim, sim}, exitUsage, "", "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			require.Equal(t, tc.code, code, stderr)
			require.Equal(t, tc.stdout, stdout)
			require.Contains(t, stderr, tc.stderrIn)
			if tc.code == exitUsage {
				require.Contains(t, stderr, "usage: receiptd config check [-config FILE | FILE]")
			}
		})
	}
}

// Issue 32, point 1: config check says where the lookups go when PosAPI is
// on this computer and the lookups are not, and names the keys of a mix
// made on purpose.
func TestConfigCheckSaysWhereLookupsGo(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	for _, tc := range []struct {
		name, upstream string
		want, absent   []string
	}{
		{"defaults", "base_url = \"http://127.0.0.1:7081\"\n",
			[]string{"note: upstream.base_url (http://127.0.0.1:7081) is on this computer; upstream.lookup_base_url (https://api.ebarimt.mn) " +
				"and upstream.stock_base_url (https://service.itc.gov.mn) are at the live default.",
				"If base_url answers as receiptd's simulator when receiptd starts (receiptd sim), the lookups follow it"},
			[]string{"warning:"}},
		{"a mix on purpose", "base_url = \"http://127.0.0.1:7081\"\nstock_base_url = \"https://stock.example\"\n",
			[]string{"upstream.lookup_base_url (https://api.ebarimt.mn) is at the live default",
				"warning: upstream.stock_base_url (https://stock.example) is set to reach the internet while upstream.base_url"},
			nil},
		{"all on loopback", "base_url = \"http://127.0.0.1:7081\"\nlookup_base_url = \"http://127.0.0.1:7081\"\nstock_base_url = \"http://127.0.0.1:7081\"\n",
			nil, []string{"note:", "warning:"}},
		{"PosAPI on another machine", "base_url = \"http://10.1.2.3:7080\"\n", nil, []string{"note:", "warning:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "c.toml", "data_dir = "+quote(t.TempDir())+"\n[upstream]\n"+tc.upstream)
			code, stdout, stderr := runCLI(t, "config", "check", path)
			require.Equal(t, exitOK, code, stderr)
			for _, w := range tc.want {
				require.Contains(t, stdout, w)
			}
			for _, a := range tc.absent {
				require.NotContains(t, stdout, a)
			}
		})
	}
}

// Issue 32, point 6: a usage error the command finds itself (not the flag
// package) prints the command's usage line too.
func TestUsageErrorsPrintTheUsageLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		line string
	}{
		{"backup without a file", []string{"backup"}, "usage: receiptd backup"},
		{"restore without a file", []string{"restore"}, "usage: receiptd restore"},
		{"config check with two files", []string{"config", "check", "a", "b"}, "usage: receiptd config check"},
		{"status with an argument", []string{"status", "extra"}, "usage: receiptd status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, tc.line)
		})
	}
}

func quote(p string) string { return `"` + filepath.ToSlash(p) + `"` }

// Issue 32, point 5: salvage refuses a database that opens and checks
// clean (exit 2, saying so, the file untouched) unless -force.
func TestSalvageRefusesAHealthyDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	s, err := store.OpenDir(dir, store.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	cfg := writeFile(t, "c.toml", dataDirConfig(dir))
	db := layout.DB(dir)

	code, stdout, stderr := runCLI(t, "salvage", "-config", cfg)
	require.Equal(t, exitUsage, code, stdout+stderr)
	require.Contains(t, stderr, db+" opens and checks clean: it is not damaged, so nothing was changed")
	require.Contains(t, stderr, "pass -force")
	kept, err := filepath.Glob(layout.KeptGlob(db, layout.Damaged))
	require.NoError(t, err)
	require.Empty(t, kept, "the good file stays where it is")
	require.FileExists(t, db)

	code, stdout, stderr = runCLI(t, "salvage", "-config", cfg, "-force")
	require.Equal(t, exitOK, code, stdout+stderr)
	kept, err = filepath.Glob(layout.KeptGlob(db, layout.Damaged))
	require.NoError(t, err)
	require.Len(t, kept, 1, "-force salvages all the same")
}

// Issue 32, point 6: `receiptd status` reports the running daemon, found
// and authenticated through the config, beside the service manager's view.
func TestStatusReportsTheRunningDaemon(t *testing.T) {
	t.Setenv("RECEIPTD_AUTH_TOKEN", "")
	up := testkit.StartSim(t, sim.Options{Seed: 32})
	addr := testkit.ClosedAddr(t)
	cfgPath := writeFile(t, "status.toml", "listen = \""+addr+"\"\ndata_dir = "+quote(filepath.Join(t.TempDir(), "data"))+
		"\n[upstream]\nbase_url = \""+up.URL()+"\"\nlookup_base_url = \""+up.URL()+"\"\nstock_base_url = \""+up.URL()+"\"\n"+
		"[auth]\ntoken = \"status-token-0123456789\"\n")
	cfg, err := config.Load(cfgPath)
	require.NoError(t, err)
	d, err := startDaemon(cfg, "", zap.NewNop())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	var stdout, stderr string
	var code int
	require.Eventually(t, func() bool {
		code, stdout, stderr = runCLI(t, "status", "-config", cfgPath)
		return code == exitOK && strings.Contains(stdout, "daemon: running")
	}, 20*time.Second, 50*time.Millisecond, "%s%s", stdout, stderr)
	require.Contains(t, stdout, "daemon: running at http://"+addr+" (version ")
	require.Contains(t, stdout, "alert: none")
	require.Contains(t, stdout, "tax service: reachable since")
	require.Contains(t, stdout, "queue: 0 waiting, 0 need a person")
	require.Contains(t, stdout, "system service: ", "the service manager's view too")

	_, stdout, _ = runCLI(t, "status", "-addr", addr, "-token", "wrong-token-0123456789")
	require.Contains(t, stdout, "daemon: GET /receiptd/status: daemon answered 401")
}

// Issue 32, point 6: every command, given arguments it does not take,
// says so and prints its usage line (exit 2).
func TestEveryCommandPrintsItsUsageLineOnMisuse(t *testing.T) {
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			args := append(strings.Fields(name), "extra-1", "extra-2", "extra-3")
			code, _, stderr := runCLI(t, args...)
			require.Equal(t, exitUsage, code, stderr)
			require.Contains(t, stderr, "unexpected arguments")
			require.Contains(t, stderr, "usage: receiptd "+name)
		})
	}
}
