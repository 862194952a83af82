package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/receiptd/receiptd/internal/config"
)

func init() {
	commands["config check"] = command{summary: "check a config file: \"ok\" and where the lookups go, or every problem with its line", run: runConfigCheck}
}

// runConfigCheck loads the file as the daemon would. Its refusal is the
// daemon's own (config.Error: every problem, each with its line), printed
// by runMain like any usage error, so `config check` and `run` report a bad
// file in one format; the exit code is 2.
func runConfigCheck(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "config check", "config check [-config FILE | FILE]")
	cfgPath := fs.String("config", "", "config file (default "+config.DefaultPath()+")")
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
	return nil
}

// printLookupNote says where the lookups go when upstream.base_url is on
// this computer but a lookup key is not: right on a till (PosAPI runs
// locally, the lookup API is on the internet), a surprise against
// `receiptd sim`, which serves the lookups too.
func printLookupNote(env *cmdEnv, u config.Upstream) {
	live := u.LiveLookups()
	if len(live) == 0 {
		return
	}
	fmt.Fprintf(env.stdout, "note: upstream.base_url (%s) is on this computer, but %s reach the internet.\n"+
		"  On a till whose PosAPI runs here, that is right. To try receiptd against `receiptd sim` without the internet,\n"+
		"  run `receiptd demo -config FILE` (its lookups stay on its simulator), or set those keys to %s too.\n",
		u.BaseURL, strings.Join(live, " and "), u.BaseURL)
}
