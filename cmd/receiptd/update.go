package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"aead.dev/minisign"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/update"
)

func init() {
	commands["update apply"] = command{summary: "verify a signed release file, keep it and switch to it (Linux, Windows)", run: runUpdateApply}
	commands["update status"] = command{summary: "the update's state and the version answering", run: runUpdateStatus}
}

func runUpdateApply(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "update apply", "update apply [-config FILE] [-version V] [-wait D] [-addr URL] [-token T] RELEASE")
	var df daemonFlags
	df.register(fs)
	ver := fs.String("version", "", "the release's version (default: read from the signature's trusted comment)")
	wait := fs.Duration("wait", 0, "how long to wait for the new version to be ready (default: control.rollback_after and 10s)")
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want the release file (its signature FILE.minisig beside it)")
	}
	if err := switchBuilt(runtime.GOOS); err != nil {
		return usageError{err: err}
	}
	lc, err := loadConfig(df.config)
	if err != nil {
		return err
	}
	cfg, file := lc.cfg, fs.Arg(0)
	if len(cfg.Update.TrustedKeys) == 0 {
		return usagef("updates are off: update.trusted_keys is empty in %s (docs/contract.md, \"Updating the fleet\")", lc.path)
	}
	sig, err := os.ReadFile(file + ".minisig")
	if err != nil {
		return usagef("the release's signature: %v", err)
	}
	if *ver == "" {
		if *ver, err = signedVersion(sig); err != nil {
			return usageError{err: err}
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil { // a till that never ran
		return err
	}
	v, err := tillOf(cfg).Take(update.Offer{Version: *ver, Signature: sig}, file, file)
	switch {
	case errors.Is(err, release.ErrDevBuild), errors.Is(err, release.ErrBusy), update.ReasonOf(err) != "":
		return usageError{err: err}
	case err != nil:
		return err
	}
	fmt.Fprintf(env.stdout, "%s verified and kept as %s\n", v.Version, v.Path)
	return askSwitch(ctx, env, df, cfg, *wait)
}

// switchBuilt says where the switch to a new version is not built yet:
// it is on Linux and Windows (internal/daemon, switch_*.go).
func switchBuilt(goos string) error {
	if goos != "linux" && goos != "windows" {
		return fmt.Errorf("receiptd update apply is not built on %s yet: install the release with the package manager", goos)
	}
	return nil
}

// signedVersion reads the version from the trusted comment "receiptd
// <version> <goos>/<goarch>"; update.Policy then checks the whole comment.
func signedVersion(sigFile []byte) (string, error) {
	var sig minisign.Signature
	if err := sig.UnmarshalText(sigFile); err != nil {
		return "", fmt.Errorf("the release's signature is not a minisign signature: %w", err)
	}
	f := strings.Fields(sig.TrustedComment)
	if len(f) != 3 || f[0] != "receiptd" {
		return "", fmt.Errorf("the signature's trusted comment %q is not \"receiptd <version> <goos>/<goarch>\": pass -version", sig.TrustedComment)
	}
	return f[1], nil
}

// tillOf is what this till takes a release by: cfg's [update] and this
// binary's version.
func tillOf(cfg config.Config) release.Till {
	return release.Till{DataDir: cfg.DataDir, TrustedKeys: cfg.Update.TrustedKeys,
		AllowDowngrade: cfg.Update.AllowDowngrade, Binary: version}
}

// askSwitch asks the running daemon to switch, and waits for the new
// version to be ready or rolled back; with no daemon running, the next
// `receiptd run` switches.
func askSwitch(ctx context.Context, env *cmdEnv, df daemonFlags, cfg config.Config, wait time.Duration) error {
	c, err := df.client()
	if err != nil {
		return err
	}
	err = c.GetJSON(ctx, http.MethodPost, "/receiptd/update", &struct{}{})
	var ae *apiclient.AnswerError
	switch {
	case errors.Is(err, apiclient.ErrNotRunning):
		fmt.Fprintln(env.stdout, "no receiptd answers: the next `receiptd run` switches to it and puts it on probation")
		return nil
	case errors.As(err, &ae) && ae.Code == http.StatusConflict:
		st, rerr := release.ReadState(cfg.DataDir)
		if rerr == nil {
			st.Enter(release.Refused, "the daemon refused the switch: "+ae.Message, time.Now())
			rerr = st.Write(cfg.DataDir)
		}
		return errors.Join(usageError{err: fmt.Errorf("the daemon refused the switch: %s", ae.Message)}, rerr)
	case err != nil:
		return err
	}
	if w, _ := config.ParseWindow(cfg.Update.Window); w.Set {
		fmt.Fprintf(env.stdout, "the switch happens inside update.window (%s); see receiptd update status\n", cfg.Update.Window)
		return nil
	}
	if wait <= 0 {
		wait = cfg.Control.RollbackAfter.Duration + cfg.ShutdownTimeout.Duration + 10*time.Second
	}
	return waitSwitched(ctx, env, cfg.DataDir, wait)
}

// waitSwitched polls update.json until the switch has an outcome.
func waitSwitched(ctx context.Context, env *cmdEnv, dataDir string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := release.ReadState(dataDir)
		if err != nil {
			return err
		}
		switch st.Phase {
		case release.Probation, release.Installed:
			fmt.Fprintf(env.stdout, "%s\n", st.Message)
			return nil
		case release.RolledBack:
			return errors.New(st.Message)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no outcome within %s: the update is %s (receiptd update status)", wait, st.Phase)
		case <-tick.C:
		}
	}
}

func runUpdateStatus(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "update status", "update status [-config FILE] [-addr URL] [-token T]")
	var df daemonFlags
	df.register(fs)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	lc, err := loadConfig(df.config)
	if err != nil {
		return err
	}
	st, err := release.ReadState(lc.cfg.DataDir)
	if err != nil {
		return err
	}
	w := env.stdout
	fmt.Fprintf(w, "state:       %s\n", st.Phase)
	if st.Message != "" {
		fmt.Fprintf(w, "message:     %s\n", st.Message)
	}
	if !st.Since.IsZero() {
		fmt.Fprintf(w, "since:       %s\n", st.Since.Format(time.RFC3339))
	}
	for _, v := range []struct {
		name string
		v    *release.Version
	}{{"running", st.Running}, {"previous", st.Previous}, {"offered", st.Offered}} {
		switch {
		case v.v == nil:
		case v.v.Path == "":
			fmt.Fprintf(w, "%-12s the entry point's own (%s)\n", v.name+":", version)
		default:
			fmt.Fprintf(w, "%-12s %s (%s)\n", v.name+":", v.v.Version, v.v.Path)
		}
	}
	if st.Running == nil {
		fmt.Fprintf(w, "running:     the entry point's own (%s)\n", version)
	}
	for _, h := range st.RolledBack {
		fmt.Fprintf(w, "rolled back: %s (never tried again)\n", h)
	}
	c, err := df.client()
	if err != nil {
		return nil
	}
	var seen struct {
		Version   string `json:"version"`
		Probation bool   `json:"onProbation"`
	}
	if err := c.GetJSON(ctx, http.MethodGet, "/receiptd/update", &seen); err != nil {
		fmt.Fprintf(w, "daemon:      not answering (%v)\n", err)
		return nil
	}
	fmt.Fprintf(w, "daemon:      %s answers", seen.Version)
	if seen.Probation {
		fmt.Fprint(w, ", on probation")
	}
	fmt.Fprintln(w)
	return nil
}
