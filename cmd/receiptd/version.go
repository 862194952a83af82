package main

import (
	"context"
	"fmt"
	"runtime"
)

func init() {
	commands["version"] = command{summary: "print the version", run: runVersion}
}

func runVersion(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "version", "version")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "receiptd %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
