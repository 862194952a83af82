package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/service"
)

// startServing starts what `run` serves, as update.json says: a release
// stopped while it was on probation is rolled back first (it did not
// pass, whatever stopped it: a kill, a crash, a power cut); a version
// installed by an update runs as this process's child (installed); else
// this binary's own daemon, which switches to a staged release once it
// runs. A child (daemon.IsChild) reads no state: its parent does. The
// daemon's log.level follows level (a remote config's, at each swap).
// A child's output goes to out (nil: this process's; daemon.Updates).
func startServing(cfg config.Config, ownPath string, log *zap.Logger, level zap.AtomicLevel, out io.Writer) (service.Daemon, error) {
	args := []string{"run"}
	if ownPath != "" {
		abs, err := filepath.Abs(ownPath)
		if err != nil {
			return nil, fmt.Errorf("config path: %w", err)
		}
		args = append(args, "-config", abs)
	}
	if daemon.IsChild() {
		d, err := startDaemon(cfg, ownPath, log)
		if err != nil {
			return nil, err
		}
		d.FollowLogLevel(level)
		d.EnableUpdates(daemon.Updates{Args: args, Output: out})
		return d, nil
	}
	st, err := release.ReadState(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("%w\nNext step: move %s aside to run this binary's own version", err, layout.Update(cfg.DataDir))
	}
	if st.Interrupted() {
		st.RollBack(fmt.Sprintf("receiptd stopped while %s was %s (a kill, a crash or a power cut)", st.Offered.Version, st.Phase), time.Now())
		if err := st.Write(cfg.DataDir); err != nil {
			return nil, err
		}
		log.Warn("the release being tried did not pass; this version runs", zap.String("why", st.Message))
	}
	if st.Running != nil && st.Running.Path != "" && switchBuilt(runtime.GOOS) == nil {
		log.Info("running the installed version", zap.String("version", st.Running.Version), zap.String("path", st.Running.Path))
		return installed{path: st.Running.Path, args: args, cfg: cfg, out: out}, nil
	}
	d, err := startDaemon(cfg, ownPath, log)
	if err != nil {
		return nil, err
	}
	d.FollowLogLevel(level)
	d.EnableUpdates(daemon.Updates{Args: args, Output: out})
	if st.Phase == release.Staged {
		if err := d.RequestSwitch(); err != nil {
			log.Warn("the staged release is not switched to", zap.Error(err))
		}
	}
	return d, nil
}

// installed is the version an update installed, run as a child of this
// thin process (daemon.RunInstalled).
type installed struct {
	path string
	args []string
	cfg  config.Config
	out  io.Writer // the child's output; nil: this process's
}

func (i installed) Run(ctx context.Context) error {
	return daemon.RunInstalled(ctx, i.path, i.args, i.cfg.ShutdownTimeout.Duration, i.out)
}

func (i installed) URL() string {
	if i.cfg.Listen == "" {
		return ""
	}
	return "http://" + config.Dialable(i.cfg.Listen)
}

func (i installed) DBPath() string { return layout.DB(i.cfg.DataDir) }
