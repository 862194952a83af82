package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/service"
)

func init() {
	commands["status"] = command{summary: "the running daemon's state (through its API) and the system service's", run: runStatus}
}

// runStatus asks both views: the daemon through its API (found and
// authenticated like entries: -addr, -token, the config;
// apiclient.PrintDaemonStatus), and the service manager. It fails (exit 1)
// only when neither knows of a receiptd.
func runStatus(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "status", "status [-addr URL] [-token T] [-config FILE]")
	var df daemonFlags
	df.register(fs)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	c, daemonErr := df.client()
	if daemonErr == nil {
		daemonErr = apiclient.PrintDaemonStatus(ctx, env.stdout, c)
	}
	if daemonErr != nil {
		fmt.Fprintf(env.stdout, "daemon: %v\n", daemonErr)
	}
	var svc strings.Builder
	svcErr := service.Manage(&svc, "status")
	if svcErr != nil {
		fmt.Fprintf(env.stdout, "system service: %v\n", svcErr)
	} else {
		fmt.Fprintf(env.stdout, "system service: %s", svc.String())
	}
	if daemonErr != nil && svcErr != nil {
		return errors.New("no receiptd answers, and the system service is not running (see above)")
	}
	return nil
}
