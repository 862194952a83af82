package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/service"
)

func init() {
	commands["status"] = command{summary: "the running daemon's state (through its API) and the system service's", run: runStatus}
}

// daemonStatus is the part of GET /receiptd/status that `receiptd status`
// prints.
type daemonStatus struct {
	Counts          map[string]int `json:"counts"`
	OldestUnsentAge int64          `json:"oldestUnsentAge"`
	Alert           string         `json:"alert"`
	Upstream        struct {
		State     string    `json:"state"`
		Since     time.Time `json:"since"`
		LastError string    `json:"lastError"`
	} `json:"upstream"`
	LastSuccess *time.Time `json:"lastSuccess"`
	Version     string     `json:"version"`
}

// runStatus asks both views: the daemon through its API (found and
// authenticated like entries: -addr, -token, the config), and the service
// manager. It fails (exit 1) only when neither knows of a receiptd.
func runStatus(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "status", "status [-addr URL] [-token T] [-config FILE]")
	var df daemonFlags
	df.register(fs)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	daemonErr := printDaemonStatus(ctx, env.stdout, df)
	if daemonErr != nil {
		fmt.Fprintf(env.stdout, "daemon: %v\n", daemonErr)
	}
	var svc strings.Builder
	svcErr := service.Control(&svc, "status")
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

// printDaemonStatus prints the running daemon's state in a few lines.
func printDaemonStatus(ctx context.Context, w io.Writer, df daemonFlags) error {
	c, err := df.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st daemonStatus
	if err := c.getJSON(ctx, "GET", "/receiptd/status", &st); err != nil {
		return err
	}
	version := st.Version
	if version == "" {
		version = "unknown"
	}
	fmt.Fprintf(w, "daemon: running at %s (version %s); alert: %s\n", c.base, version, st.Alert)
	up := "reachable"
	if st.Upstream.State != "up" {
		up = "NOT reachable"
	}
	fmt.Fprintf(w, "  tax service: %s since %s", up, st.Upstream.Since.Local().Format(time.DateTime))
	if st.Upstream.LastError != "" && st.Upstream.State != "up" {
		fmt.Fprintf(w, " (last error: %s)", st.Upstream.LastError)
	}
	fmt.Fprintln(w)
	waiting := st.Counts["queued"] + st.Counts["sending"] + st.Counts["delete_queued"]
	need := st.Counts["held"] + st.Counts["rejected"] + st.Counts["payment"] + st.Counts["delete_rejected"]
	fmt.Fprintf(w, "  queue: %d waiting, %d need a person, %d sent; oldest unsent %s\n",
		waiting, need, st.Counts["sent"], time.Duration(st.OldestUnsentAge)*time.Second)
	if st.Alert != "none" && st.Alert != "" {
		fmt.Fprintf(w, "  the status page says what needs doing: %s/\n", c.base)
	}
	return nil
}
