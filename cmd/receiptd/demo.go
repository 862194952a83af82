package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/demo"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/logging"
	"github.com/receiptd/receiptd/internal/sim"
)

func init() {
	commands["demo"] = command{summary: "run the daemon beside the built-in tax service simulator, on loopback", run: runDemo}
}

// runDemo parses demo's flags; internal/demo runs it, starting the daemon
// through startDaemon so its refusals exit as run's do.
func runDemo(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "demo", "demo [-config FILE] [-outage D] [-outage-after D] [-listen ADDR] [-sim-listen ADDR]\n"+
		"    [-lotteries N] [-send-data-fail] [-clock-skew D]")
	var o demo.Options
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:7080", "loopback address of the daemon; the demo stops when it is busy (PosAPI itself usually holds 7080): give it another, and use it in the commands you paste")
	fs.DurationVar(&o.Outage, "outage", 0, "take the simulated tax service down for this long, then bring it back (0: no outage)")
	fs.DurationVar(&o.OutageAfter, "outage-after", 15*time.Second, "when the outage starts")
	fs.StringVar(&o.Config, "config", "", "a config file: its [fleet], [posapi], [backup] and other sections apply; "+
		"the simulator, the data directory, listen and the upstream URLs stay the demo's own")
	fs.StringVar(&o.Sim.Listen, "sim-listen", "127.0.0.1:7081", "loopback address of the demo's simulator, for its /sim/ API; the demo stops when it is busy")
	fs.IntVar(&o.Sim.Lotteries, "lotteries", sim.DefaultLotteries, "the simulated PosAPI's lottery reserve; later: PUT /sim/lotteries {\"left\":N}")
	fs.BoolVar(&o.Sim.SendDataFail, "send-data-fail", false, "the simulated PosAPI's sendData fails; later: PUT /sim/faults {\"sendDataFail\":false}")
	fs.DurationVar(&o.Sim.ClockSkew, "clock-skew", 0, "shift the simulated tax service's clock, e.g. -5m; later: PUT /sim/faults {\"clockSkew\":\"0s\"}")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if o.Outage < 0 || o.OutageAfter < 0 {
		return usagef("-outage and -outage-after must not be negative")
	}
	for _, a := range []struct{ flag, addr string }{{"-listen", o.Listen}, {"-sim-listen", o.Sim.Listen}} {
		if host, _, err := net.SplitHostPort(a.addr); err != nil || !isLoopbackHost(host) {
			return usagef("%s %q: the demo listens on a loopback address only, like 127.0.0.1:7080", a.flag, a.addr)
		}
	}
	if o.Sim.Lotteries < 1 {
		return usagef("-lotteries must be at least 1")
	}
	if err := demoPortsFree(o); err != nil {
		return err
	}
	log, closeLog, err := logging.New(logging.Options{Level: "info", Console: true})
	if err != nil {
		return err
	}
	defer func() { _ = closeLog() }()
	err = demo.Run(ctx, env.stdout, log, o, func(cfg config.Config) (demo.Daemon, error) {
		d, err := startDaemon(cfg, "", log)
		if err != nil {
			return nil, err
		}
		if len(cfg.Update.TrustedKeys) > 0 {
			// A release the demo switches to runs as `run` on the demo's
			// own config, beside the demo's simulator, which stays.
			path := layout.DemoConfig(cfg.DataDir)
			data, err := config.FileTOML(cfg)
			if err == nil {
				err = os.WriteFile(path, data, 0o600)
			}
			if err != nil {
				return nil, fmt.Errorf("demo: the config a new version runs on: %w", err)
			}
			d.EnableUpdates(daemon.Updates{Args: []string{"run", "-config", path}})
		}
		return d, nil
	})
	if ue := (demo.UsageError{}); errors.As(err, &ue) {
		return usageError{err: ue.Err, misused: ue.Misused}
	}
	return err
}

// demoPortsFree refuses a busy -listen or -sim-listen before anything
// starts. The demo does not move to a free port: the commands a person
// pastes (README's walkthroughs) name 7080 and 7081, and would reach the
// program that holds them.
func demoPortsFree(o demo.Options) error {
	for _, a := range []struct{ flag, addr, fix string }{
		{"-listen", o.Listen, "another program holds it (another demo or receiptd?): stop it, or give the demo another port: -listen 127.0.0.1:7090, " +
			"and use that port in the commands you paste; "},
		{"-sim-listen", o.Sim.Listen, "a `receiptd sim` or another demo may hold it: stop it, or give the demo's simulator another port: " +
			"-sim-listen 127.0.0.1:7091, and use that port in the /sim commands you paste; "},
	} {
		ln, err := net.Listen("tcp", a.addr)
		if err == nil {
			_ = ln.Close()
			continue
		}
		why, busy := daemon.PortInUse(err)
		if !busy {
			return fmt.Errorf("%s %s: %w", a.flag, a.addr, err)
		}
		_, port, _ := net.SplitHostPort(a.addr)
		if a.flag == "-listen" && port == daemon.PosAPIPort {
			a.fix = "on a till that is usually PosAPI itself, which listens on " + daemon.PosAPIPort + " unless told otherwise: " +
				"give the demo another port: -listen 127.0.0.1:7090, and use that port in the commands you paste; "
		}
		return &daemon.Refusal{Key: a.flag, Err: err, Problem: a.addr + " is in use by another program (" + why + ")",
			Fix: a.fix + daemon.PortHolder(runtime.GOOS, port) + " shows which program holds it"}
	}
	return nil
}

func isLoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
