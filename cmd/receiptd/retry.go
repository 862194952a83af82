package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/queue"
)

func init() {
	commands["retry"] = command{summary: "put a rejected, payment or held entry back in the queue (held: -force)", run: runRetry}
}

func runRetry(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "retry", "retry [-addr URL] [-token T] [-force] QUEUEID")
	var df daemonFlags
	df.register(fs)
	force := fs.Bool("force", false, "retry a held entry: only after checking with the tax service that it was not issued")
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
	path := "/receiptd/entries/" + url.PathEscape(id) + "/retry"
	if *force {
		path += "?confirm=checked"
	}
	var e queue.Entry
	if err := c.GetJSON(ctx, "POST", path, &e); err != nil {
		var ae *apiclient.AnswerError
		if errors.As(err, &ae) && ae.Code == http.StatusConflict && !*force {
			// The daemon says what to check before a retry of a held entry.
			return usagef("%s", ae.Message)
		}
		return err
	}
	fmt.Fprintf(env.stdout, "%s: %s\n", e.QueueID, e.State)
	if last := len(e.Attempts) - 1; last >= 0 && e.Attempts[last].UpstreamID != "" {
		fmt.Fprintf(env.stdout, "the earlier upstream id %s stays in the entry's attempts; a new attempt issues a new receipt\n",
			e.Attempts[last].UpstreamID)
	}
	return nil
}
