package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/receiptd/receiptd/internal/config"
)

func init() {
	commands["config check"] = command{summary: "check a config file: \"ok\" or every problem, naming its key", run: runConfigCheck}
}

func runConfigCheck(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "config check", "config check [-config FILE]")
	cfgPath := fs.String("config", "", "config file (default "+config.DefaultPath()+")")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	lc, err := loadConfig(*cfgPath)
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			if probs := keyErrors(err); len(probs) > 0 {
				fmt.Fprintf(env.stderr, "receiptd config check: %s: %d problem(s):\n", configName(*cfgPath), len(probs))
				for _, p := range probs {
					fmt.Fprintf(env.stderr, "  %s\n", p)
				}
				return usageError{err: err, reported: true}
			}
		}
		return err
	}
	if lc.defaulted {
		fmt.Fprintf(env.stdout, "ok: no file at %s; the defaults apply\n", lc.path)
		return nil
	}
	fmt.Fprintf(env.stdout, "ok: %s\n", lc.path)
	return nil
}

// keyErrors collects every *config.KeyError in err's tree, in order.
func keyErrors(err error) []*config.KeyError {
	switch u := err.(type) {
	case *config.KeyError:
		return []*config.KeyError{u}
	case interface{ Unwrap() []error }:
		var out []*config.KeyError
		for _, e := range u.Unwrap() {
			out = append(out, keyErrors(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		return keyErrors(u.Unwrap())
	}
	return nil
}

func configName(path string) string {
	if path == "" {
		return config.DefaultPath()
	}
	return path
}
