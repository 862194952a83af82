package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/receiptd/receiptd/internal/queue"
)

func init() {
	commands["retry"] = command{summary: "put a rejected, payment or held entry back in the queue", run: runRetry}
}

func runRetry(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "retry", "retry [-addr URL] [-token T] QUEUEID")
	var df daemonFlags
	df.register(fs)
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one queueId, like Q000000000042")
	}
	id := fs.Arg(0)
	if _, ok := queue.ParseID(id); !ok {
		return usagef("%q is not a queueId (Q followed by 12 digits)", id)
	}
	c, err := df.client()
	if err != nil {
		return err
	}
	var e queue.Entry
	if err := c.getJSON(ctx, "POST", "/receiptd/entries/"+url.PathEscape(id)+"/retry", &e); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "%s: %s\n", e.QueueID, e.State)
	return nil
}
