package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control"
)

func init() {
	commands["config check"] = command{summary: "check a config file (and a head office's fragment over it): \"ok\" and where the lookups go, or every problem with its line", run: runConfigCheck}
}

// runConfigCheck loads the file as the daemon would. Its refusal is the
// daemon's own (config.Error: every problem, each with its line), printed
// by runMain like any usage error, so `config check` and `run` report a bad
// file in one format; the exit code is 2.
func runConfigCheck(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "config check", "config check [-config FILE | FILE] [-remote FRAGMENT]")
	cfgPath := fs.String("config", "", "config file (default "+config.DefaultPath()+")")
	remote := fs.String("remote", "", "a head office's fragment to check over the file (default: the last one applied, with [control] on)")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() == 1 {
		if *cfgPath != "" {
			return usagef("give the file once: either -config %s or %s", *cfgPath, fs.Arg(0))
		}
		*cfgPath = fs.Arg(0)
	}
	lc, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if lc.defaulted {
		fmt.Fprintf(env.stdout, "ok: no file at %s; the defaults apply\n", lc.path)
	} else {
		fmt.Fprintf(env.stdout, "ok: %s\n", lc.path)
	}
	for _, line := range lc.cfg.Upstream.LookupNote() {
		fmt.Fprintln(env.stdout, line)
	}
	return checkRemote(env, lc, *remote)
}

// checkRemote prints the remote keys and the hash of the fragment laid
// over the file: the one named by -remote (refused as the daemon would
// refuse it), or the last one applied (control.StartConfig).
func checkRemote(env *cmdEnv, lc loadedConfig, remote string) error {
	own := lc.ownPath()
	var m config.Merged
	var err error
	if remote != "" {
		fragment, err := os.ReadFile(remote)
		if err != nil {
			return usagef("read -remote: %v", err)
		}
		if m, err = config.Merge(own, fragment); err != nil {
			return usageError{err: err}
		}
	} else if m, err = control.StartConfig(own, lc.cfg); err != nil {
		fmt.Fprintf(env.stdout, "remote config: %v\n", err)
		return nil
	}
	if m.Hash != "" {
		fmt.Fprintf(env.stdout, "remote config %s sets: %s\n", m.Hash, strings.Join(m.RemoteKeys, ", "))
	}
	return nil
}
