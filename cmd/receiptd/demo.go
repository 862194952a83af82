package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/logging"
	"github.com/receiptd/receiptd/internal/sim"
)

func init() {
	commands["demo"] = command{summary: "run the daemon beside the built-in tax service simulator, on loopback", run: runDemo}
}

// demoOptions are demo's flags.
type demoOptions struct {
	listen      string
	outage      time.Duration
	outageAfter time.Duration
	config      string // a config file whose sections apply beside the demo's own
	sim         demoSim
	token       string // auth.token in force, for the printed curl lines
}

func runDemo(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "demo", "demo [-config FILE] [-outage D] [-outage-after D] [-listen ADDR] [-sim-listen ADDR]\n"+
		"    [-lotteries N] [-send-data-fail] [-clock-skew D]")
	var o demoOptions
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7080", "loopback address of the daemon (a free port if this one is busy)")
	fs.DurationVar(&o.outage, "outage", 0, "take the simulated tax service down for this long, then bring it back (0: no outage)")
	fs.DurationVar(&o.outageAfter, "outage-after", 15*time.Second, "when the outage starts")
	fs.StringVar(&o.config, "config", "", "a config file: its [fleet], [posapi], [backup] and other sections apply; "+
		"the simulator, the data directory, listen and the upstream URLs stay the demo's own")
	o.sim.register(fs)
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if o.outage < 0 || o.outageAfter < 0 {
		return usagef("-outage and -outage-after must not be negative")
	}
	for _, a := range []struct{ flag, addr string }{{"-listen", o.listen}, {"-sim-listen", o.sim.listen}} {
		if host, _, err := net.SplitHostPort(a.addr); err != nil || !isLoopbackHost(host) {
			return usagef("%s %q: the demo listens on a loopback address only, like 127.0.0.1:7080", a.flag, a.addr)
		}
	}
	if o.sim.lotteries < 1 {
		return usagef("-lotteries must be at least 1")
	}
	log, closeLog, err := logging.New(logging.Options{Level: "info", Console: true})
	if err != nil {
		return err
	}
	defer func() { _ = closeLog() }()
	return demo(ctx, env, log, o)
}

func isLoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// demo owns the simulator, the temporary data directory and the daemon,
// and releases them in reverse order when ctx ends.
func demo(ctx context.Context, env *cmdEnv, log *zap.Logger, o demoOptions) error {
	s, err := o.sim.start(log)
	if err != nil {
		return err
	}
	defer s.Close()
	dir, err := os.MkdirTemp("", "receiptd-demo-")
	if err != nil {
		return fmt.Errorf("demo: temporary data directory: %w", err)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("could not remove the demo's data directory", zap.String("dir", dir), zap.Error(err))
		}
	}()
	cfg, err := demoConfig(o, dir, s.URL(), log)
	if err != nil {
		return err
	}
	o.token = cfg.Auth.Token
	d, err := startDaemon(cfg, "", log)
	if err != nil {
		return err
	}
	sample := filepath.Join(dir, "receipt.json")
	if err := os.WriteFile(sample, sampleReceipt("000001"), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	printDemoHelp(env, d.URL(), s.URL(), sample, o)

	var wg sync.WaitGroup
	defer wg.Wait()
	if o.outage > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outageLoop(ctx, log.Named("demo"), s, d.URL(), o)
		}()
	}
	if err := d.Run(ctx); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

func printDemoHelp(env *cmdEnv, api, simURL, sample string, o demoOptions) {
	w := env.stdout
	fmt.Fprintf(w, "\nreceiptd demo: the daemon at %s, a simulated tax service at %s\n\n", api, simURL)
	fmt.Fprintf(w, "  status page   %s/\n", api)
	fmt.Fprintf(w, "  status JSON   %s/receiptd/status\n", api)
	fmt.Fprintf(w, "  entries       %s/receiptd/entries\n", api)
	fmt.Fprintf(w, "  metrics       %s/metrics\n", api)
	fmt.Fprintf(w, "  sim faults    %s/sim/faults   (PUT {\"down\":true,\"downFor\":\"30s\"} to cut the line)\n\n", simURL)
	fmt.Fprintln(w, "send a receipt:")
	auth := ""
	if o.token != "" {
		auth = fmt.Sprintf(" -H \"Authorization: Bearer %s\"", o.token)
	}
	if runtime.GOOS == "windows" {
		fmt.Fprintf(w, "  curl -s -i%s -H \"Content-Type: application/json\" --data-binary @%s %s/rest/receipt\n", auth, sample, api)
	} else {
		fmt.Fprintf(w, "  curl -s -i%s -H 'Content-Type: application/json' -d '%s' %s/rest/receipt\n", auth, sampleReceipt("000001"), api)
	}
	fmt.Fprintln(w, "(sent twice, it is answered as the first time with Idempotent-Replayed: true;")
	fmt.Fprintln(w, " change billIdSuffix for a new receipt)")
	fmt.Fprintln(w, "answered 200: the tax service issued it, and the answer carries its e-barimt;")
	fmt.Fprintf(w, "answered 202: it is stored and queued (the tax service is down or slow), and its e-barimt\n  comes later, once, from %s/receiptd/entries/<X-Queue-Id>/answer\n", api)
	if o.outage > 0 {
		fmt.Fprintf(w, "\nin %s the tax service goes down for %s; watch the log and the status page.\n", o.outageAfter, o.outage)
	}
	fmt.Fprintln(w, "\nCtrl-C stops the demo and deletes its data.")
}

// sampleReceipt is the receipt the demo prints and posts.
func sampleReceipt(billIDSuffix string) []byte { return sim.SampleReceipt("POS-1", billIDSuffix) }
