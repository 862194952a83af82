package main

import (
	"context"
	"fmt"
	"os"
	"slices"
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
	printLookupNote(env, lc.cfg.Upstream)
	return checkRemote(env, lc, *remote)
}

// checkRemote prints the remote keys and the hash of the fragment laid
// over the file: the one named by -remote (refused as the daemon would
// refuse it), or the last one applied (control.StartConfig).
func checkRemote(env *cmdEnv, lc loadedConfig, remote string) error {
	own := lc.path
	if lc.defaulted {
		own = ""
	}
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

// printLookupNote says where the lookups go when upstream.base_url is on
// this computer but a lookup key is not. A key at its live default follows
// base_url when base_url turns out to be `receiptd sim` at start (a till's
// PosAPI is not, so a till's lookups stay on the internet); a key set to
// another non-loopback address is a mix made on purpose, warned about by
// name.
func printLookupNote(env *cmdEnv, u config.Upstream) {
	live := u.LiveLookups()
	if len(live) == 0 {
		return
	}
	atDefault := u.AtLiveDefault()
	var defaults, mixed []string
	for _, l := range live {
		if slices.Contains(atDefault, strings.Fields(l)[0]) {
			defaults = append(defaults, l)
		} else {
			mixed = append(mixed, l)
		}
	}
	if len(defaults) > 0 {
		fmt.Fprintf(env.stdout, "note: upstream.base_url (%s) is on this computer; %s %s at the live default.\n"+
			"  If base_url answers as receiptd's simulator when receiptd starts (receiptd sim), the lookups follow it and\n"+
			"  nothing leaves this computer; a till's PosAPI does not, so on a till they reach the internet, as they must.\n",
			u.BaseURL, strings.Join(defaults, " and "), pick(len(defaults), "is", "are"))
	}
	if len(mixed) > 0 {
		fmt.Fprintf(env.stdout, "warning: %s %s set to reach the internet while upstream.base_url (%s) is on this computer:\n"+
			"  receiptd asks %s even when base_url is receiptd's simulator. Remove the %s to let the lookups follow the simulator.\n",
			strings.Join(mixed, " and "), pick(len(mixed), "is", "are"), u.BaseURL, pick(len(mixed), "it", "them"), pick(len(mixed), "key", "keys"))
	}
}

// pick is one when n is 1, many otherwise.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
