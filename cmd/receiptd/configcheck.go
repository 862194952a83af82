package main

import (
	"context"
	"fmt"

	"github.com/receiptd/receiptd/internal/config"
)

func init() {
	commands["config check"] = command{summary: "check a config file: \"ok\", or every problem with its line", run: runConfigCheck}
}

// runConfigCheck loads the file as the daemon would. Its refusal is the
// daemon's own (config.Error: every problem, each with its line), printed
// by runMain like any usage error, so `config check` and `run` report a bad
// file in one format; the exit code is 2.
func runConfigCheck(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "config check", "config check [-config FILE]")
	cfgPath := fs.String("config", "", "config file (default "+config.DefaultPath()+")")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	lc, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if lc.defaulted {
		fmt.Fprintf(env.stdout, "ok: no file at %s; the defaults apply\n", lc.path)
		return nil
	}
	fmt.Fprintf(env.stdout, "ok: %s\n", lc.path)
	return nil
}
