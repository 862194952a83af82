// Package demo owns `receiptd demo`'s run: the built-in tax service
// simulator, a temporary data directory, the daemon between them on
// loopback, the banner that says what to try, and the optional outage
// script. Package main parses the flags and starts the daemon (Options.Start,
// which classifies its refusals); this package puts the pieces together and
// releases them in reverse order.
//
// It promises that nothing the demo runs leaves this computer: the daemon,
// the simulator and every upstream URL are on loopback (Config), and that
// the data directory it made is removed when the demo ends.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/sim"
)

// Options are the demo's settings, as its flags give them.
type Options struct {
	Listen      string        // the daemon's loopback address (busy: the daemon refuses to start)
	Outage      time.Duration // how long the simulator goes down; 0: no outage
	OutageAfter time.Duration // when the outage starts
	Config      string        // a config file whose sections apply beside the demo's own
	Sim         Sim
}

// Sim is the demo's own simulator: where it listens and what PosAPI state
// it starts in (the same settings as `receiptd sim`).
type Sim struct {
	Listen       string
	Lotteries    int
	SendDataFail bool
	ClockSkew    time.Duration
}

// Daemon is the running daemon the demo drives (a *daemon.Supervisor).
type Daemon interface {
	URL() string
	Run(ctx context.Context) error
}

// UsageError is a refusal caused by the demo's options or its config file,
// not by its run: the command line's exit 2. Misused says the command line
// itself is wrong (not the file it names).
type UsageError struct {
	Err     error
	Misused bool
}

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Run owns the simulator, the temporary data directory and the daemon
// (started by start with the demo's config), prints the banner to out, runs
// the outage script when o asks for one, and releases everything in reverse
// order when ctx ends.
func Run(ctx context.Context, out io.Writer, log *zap.Logger, o Options, start func(config.Config) (Daemon, error)) error {
	s, err := o.Sim.start()
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
	cfg, err := Config(o, dir, s.URL(), log)
	if err != nil {
		return err
	}
	d, err := start(cfg)
	if err != nil {
		return err
	}
	sample := filepath.Join(dir, "receipt.json")
	if err := os.WriteFile(sample, SampleReceipt("000001"), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	PrintHelp(out, Banner{API: d.URL(), Sim: s.URL(), Sample: sample, Token: cfg.Auth.Token.Reveal(), Outage: o.Outage, OutageAfter: o.OutageAfter})

	var wg sync.WaitGroup
	defer wg.Wait()
	if o.Outage > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &apiclient.Client{Base: d.URL(), Token: cfg.Auth.Token.Reveal(), HTTP: demoHTTP}
			outageLoop(ctx, log.Named("demo"), s, c, o)
		}()
	}
	if err := d.Run(ctx); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// Banner is what the demo's banner names.
type Banner struct {
	API, Sim    string // the daemon's and the simulator's base URLs
	Sample      string // the sample receipt's file (curl reads it on Windows)
	Token       string // auth.token in force, for the printed curl lines
	Outage      time.Duration
	OutageAfter time.Duration
}

// PrintHelp prints the demo's banner: where things are, how to send a
// receipt, and what each answer means.
func PrintHelp(w io.Writer, b Banner) {
	api := b.API
	fmt.Fprintf(w, "\nreceiptd demo: the daemon at %s, a simulated tax service at %s\n\n", api, b.Sim)
	fmt.Fprintf(w, "  status page   %s/\n", api)
	fmt.Fprintf(w, "  status JSON   %s/receiptd/status\n", api)
	fmt.Fprintf(w, "  entries       %s/receiptd/entries\n", api)
	fmt.Fprintf(w, "  metrics       %s/metrics\n", api)
	fmt.Fprintf(w, "  sim faults    %s/sim/faults   (PUT {\"down\":true,\"downFor\":\"30s\"} to cut the line)\n\n", b.Sim)
	fmt.Fprintln(w, "send a receipt:")
	auth := ""
	if b.Token != "" {
		auth = fmt.Sprintf(" -H \"Authorization: Bearer %s\"", b.Token)
	}
	if runtime.GOOS == "windows" {
		fmt.Fprintf(w, "  curl -s -i%s -H \"Content-Type: application/json\" --data-binary @%s %s/rest/receipt\n", auth, b.Sample, api)
	} else {
		fmt.Fprintf(w, "  curl -s -i%s -H 'Content-Type: application/json' -d '%s' %s/rest/receipt\n", auth, SampleReceipt("000001"), api)
	}
	fmt.Fprintln(w, "(sent twice, it is answered as the first time with Idempotent-Replayed: true;")
	fmt.Fprintln(w, " change billIdSuffix for a new receipt)")
	fmt.Fprintln(w, "answered 200: the tax service issued it, and the answer carries its e-barimt;")
	fmt.Fprintf(w, "answered 202: it is stored and queued (the tax service is down or slow), and its e-barimt\n  comes later, once, from %s/receiptd/entries/<X-Queue-Id>/answer\n", api)
	if b.Outage > 0 {
		fmt.Fprintf(w, "\nin %s the tax service goes down for %s; watch the log and the status page.\n", b.OutageAfter, b.Outage)
	}
	fmt.Fprintln(w, "\nCtrl-C stops the demo and deletes its data.")
}

// SampleReceipt is the receipt the demo prints and posts.
func SampleReceipt(billIDSuffix string) []byte { return sim.SampleReceipt("POS-1", billIDSuffix) }
