package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"aead.dev/minisign"
	"github.com/open-telemetry/opamp-go/protobufs"

	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// The switch's targets (issue 39): no POS connection refused or closed
// unanswered, and no POS answer slower than this while it happens.
const switchMaxAnswer = time.Second

// switchFlags are the switch step's own flags.
var switchFlags struct {
	only      bool
	rounds    int
	clients   int
	probation time.Duration
	via       string
	before    time.Duration
	pause     time.Duration
}

func init() {
	flag.BoolVar(&switchFlags.only, "switch-only", false, "run only the switch step: a till switched from 1.0.0 to 1.1.0 under POS load (Linux)")
	flag.IntVar(&switchFlags.rounds, "switch-rounds", 3, "switches measured for each way of -switch-via (a new till each)")
	flag.IntVar(&switchFlags.clients, "switch-clients", 4, "POS clients posting through each switch (even-numbered: a fresh connection per sale; odd: keep-alive)")
	flag.DurationVar(&switchFlags.probation, "switch-probation", 3*time.Second, "update.probation of the till switched")
	flag.StringVar(&switchFlags.via, "switch-via", "offer,apply", "how the release reaches the till: offer (a head office over OpAMP), apply (receiptd update apply), or both")
	flag.DurationVar(&switchFlags.before, "switch-before", 2*time.Second, "POS load measured before each offer, for reference")
	flag.DurationVar(&switchFlags.pause, "switch-pause", 0, "each POS client's pause between an answer and its next sale (0: at once, the most connections open when the switch comes)")
}

// switchRelease is what the step switches: receiptd 1.0.0 and 1.1.0 built
// from this tree, and 1.1.0 as a signed release file.
type switchRelease struct {
	v100, v110 string // the two binaries
	file       string // the release file (1.1.0), its .minisig beside it
	body, sig  []byte
	publicKey  string // as update.trusted_keys holds it
}

// buildSwitch builds the two versions into dir/releases and signs 1.1.0
// with a key made here, as `minisign -G` and `minisign -S -t` would (what
// internal/update/updatetest does for the tests).
func buildSwitch(ctx context.Context, dir string) (*switchRelease, error) {
	out := filepath.Join(dir, "releases")
	if err := os.MkdirAll(out, 0o700); err != nil {
		return nil, fmt.Errorf("switch: %w", err)
	}
	r := &switchRelease{}
	for _, v := range []struct {
		version string
		path    *string
	}{{"1.0.0", &r.v100}, {"1.1.0", &r.v110}} {
		*v.path = filepath.Join(out, "receiptd-"+v.version)
		cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X main.version="+v.version, "-o", *v.path, harness.Package)
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("switch: build %s: %w: %s", v.version, err, b)
		}
	}
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("switch: make a key: %w", err)
	}
	r.publicKey = pub.String()
	if r.body, err = os.ReadFile(r.v110); err != nil {
		return nil, fmt.Errorf("switch: %w", err)
	}
	mr := minisign.NewReader(bytes.NewReader(r.body))
	if _, err := io.Copy(io.Discard, mr); err != nil {
		return nil, fmt.Errorf("switch: sign: %w", err)
	}
	r.sig = mr.SignWithComments(priv, "receiptd 1.1.0 "+runtime.GOOS+"/"+runtime.GOARCH, "signature from receiptd-bench's own key")
	r.file = filepath.Join(out, "release", "receiptd-1.1.0")
	if err := os.MkdirAll(filepath.Dir(r.file), 0o700); err != nil {
		return nil, fmt.Errorf("switch: %w", err)
	}
	if err := os.WriteFile(r.file, r.body, 0o755); err != nil {
		return nil, fmt.Errorf("switch: %w", err)
	}
	if err := os.WriteFile(r.file+".minisig", r.sig, 0o644); err != nil {
		return nil, fmt.Errorf("switch: %w", err)
	}
	return r, nil
}

// phaseSeen is a phase of update.json as the step saw it: the time the
// writer recorded (since) and when the step first read it.
type phaseSeen struct {
	phase string
	since time.Time
	seen  time.Time
}

// watchPhases reads dataDir's update.json every 5 ms until stop and
// returns each phase it saw, in order. The file is replaced by a rename,
// so every read is whole.
func watchPhases(dataDir string, stop <-chan struct{}) <-chan []phaseSeen {
	out := make(chan []phaseSeen, 1)
	go func() {
		var seen []phaseSeen
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var st struct {
				Phase string    `json:"state"`
				Since time.Time `json:"since"`
			}
			if b, err := os.ReadFile(layout.Update(dataDir)); err == nil && json.Unmarshal(b, &st) == nil {
				if n := len(seen); n == 0 || seen[n-1].phase != st.Phase || !seen[n-1].since.Equal(st.Since) {
					seen = append(seen, phaseSeen{st.Phase, st.Since, time.Now()})
				}
			}
			select {
			case <-stop:
				out <- seen
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// switchRound is one switch from 1.0.0 to 1.1.0 of a new till under POS
// load.
type switchRound struct {
	n        int
	via      string // offer or apply
	t0       time.Time
	phases   []phaseSeen
	events   []pkgEvent // the head office's view
	connects int        // OpAMP connections the head office saw
	uids     int        // instance UIDs it saw (1: the same till throughout)
	reported time.Time  // INSTALLED 1.1.0 seen by the head office
	applied  time.Time  // update apply exited (apply)
	applyOut string
	fetches  int // requests to the file server (offer)
	attempts []posAttempt
	entries  map[string]int // queueId → entries stored
	statusN  int            // entries by /receiptd/status's counts
	failed   string         // why the round did not reach INSTALLED
	logPath  string
}

// runSwitchRound starts a new till on 1.0.0 (startSwitchTill), puts the
// POS clients to work, and after switchFlags.before hands it 1.1.0 by
// via; it ends once the head office has seen 1.1.0 INSTALLED and the
// POS clients have posted on for half a second more.
func (b *bench) runSwitchRound(ctx context.Context, rel *switchRelease, via string, n int) (*switchRound, error) {
	r := &switchRound{n: n, via: via}
	up := sim.New(sim.Options{Seed: 1})
	if err := up.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	defer up.Close()
	ho, err := startHeadOffice()
	if err != nil {
		return nil, err
	}
	defer ho.close()
	files, err := serveFile("receiptd-1.1.0", rel.body)
	if err != nil {
		return nil, err
	}
	defer files.close()
	p, dataDir, err := b.startSwitchTill(ctx, rel, up.URL(), ho)
	if p != nil {
		defer func() { _ = stop(ctx, p) }()
	}
	if err != nil {
		return nil, err
	}
	r.logPath = p.LogPath()
	stopWatch := make(chan struct{})
	phases := watchPhases(dataDir, stopWatch)
	pos := startPOS(p.URL(), switchFlags.clients, switchFlags.pause)
	if clock.Sleep(ctx, switchFlags.before) {
		r.t0 = time.Now()
		applied := r.handOver(ctx, rel, ho, files.url, p.ConfigPath())
		if err := waitInstalled(ctx, ho); err != nil {
			r.failed = err.Error()
		}
		r.reported = time.Now()
		<-applied
		clock.Sleep(ctx, 500*time.Millisecond)
	}
	r.attempts = pos.finish()
	close(stopWatch)
	r.phases = <-phases
	r.events, r.connects = ho.history()
	_, _, r.uids = ho.till()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	files.mu.Lock()
	r.fetches = files.requests
	files.mu.Unlock()
	if r.entries, r.statusN, err = storedEntries(ctx, p.URL()); err != nil {
		return r, fmt.Errorf("switch: read what the till stored: %w\nlog: %s", err, p.LogTail(4000))
	}
	return r, nil
}

// startSwitchTill starts a new till on 1.0.0: update.trusted_keys the
// bench's key, a short probation, [control] on ho, upstream the
// simulator; it returns once the head office has seen it take packages.
// A Process returned is the caller's to stop, error or not.
func (b *bench) startSwitchTill(ctx context.Context, rel *switchRelease, upstream string, ho *headOffice) (*harness.Process, string, error) {
	cfg, dir, err := b.config(upstream, 2)
	if err != nil {
		return nil, "", err
	}
	cfg.Log.Level = "info" // the switch's own lines: when the old daemon stopped, how long the switch took
	cfg.Update.TrustedKeys = []string{rel.publicKey}
	cfg.Update.Probation = config.Dur(switchFlags.probation)
	cfg.Control.OpAMPURL = ho.url()
	p, err := harness.Start(ctx, rel.v100, dir, cfg)
	if err != nil {
		return nil, "", err
	}
	if err := p.WaitReady(ctx); err != nil {
		return p, "", err
	}
	if err := waitHeadOffice(ctx, ho, 30*time.Second, func(e pkgEvent, caps uint64) bool {
		return caps&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages) != 0 &&
			e.has == "1.0.0" && e.status == "Installed"
	}); err != nil {
		return p, "", fmt.Errorf("switch: 1.0.0 never said it takes packages: %w\nlog: %s", err, p.LogTail(4000))
	}
	return p, cfg.DataDir, nil
}

// handOver gives the till 1.1.0 by r.via: offered by ho (the file at
// fileURL), or `receiptd update apply` run as an operator would (its
// exit and output kept in r). The channel is closed once update apply
// has exited (at once for an offer).
func (r *switchRound) handOver(ctx context.Context, rel *switchRelease, ho *headOffice, fileURL, cfgPath string) <-chan struct{} {
	done := make(chan struct{})
	if r.via == "offer" {
		ho.offerRelease(fileURL, "1.1.0", rel.body, rel.sig)
		close(done)
		return done
	}
	go func() {
		defer close(done)
		out, err := exec.CommandContext(ctx, rel.v100, "update", "apply", "-config", cfgPath, rel.file).CombinedOutput()
		r.applied, r.applyOut = time.Now(), strings.TrimSpace(string(out))
		if err != nil {
			r.applyOut += " (" + err.Error() + ")"
		}
	}()
	return done
}

// waitInstalled waits until the head office sees 1.1.0 INSTALLED and
// answering, or INSTALL_FAILED (an error).
func waitInstalled(ctx context.Context, ho *headOffice) error {
	err := waitHeadOffice(ctx, ho, 90*time.Second, func(e pkgEvent, _ uint64) bool {
		return e.status == "InstallFailed" || e.has == "1.1.0" && e.status == "Installed" && e.version == "1.1.0"
	})
	if last, _, _ := ho.till(); err == nil && last.status == "InstallFailed" {
		return fmt.Errorf("INSTALL_FAILED: %s", last.message)
	}
	return err
}

// waitHeadOffice waits until cond holds for the one till the head office
// knows.
func waitHeadOffice(ctx context.Context, ho *headOffice, limit time.Duration, cond func(pkgEvent, uint64) bool) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if e, caps, n := ho.till(); n == 1 && cond(e, caps) {
			return nil
		}
		if !clock.Sleep(ctx, 10*time.Millisecond) {
			return ctx.Err()
		}
	}
	e, _, n := ho.till()
	return fmt.Errorf("not within %s; the head office knows %d till(s), the last report: %s %s has %q offered %q version %q %q",
		limit, n, e.at.Format("15:04:05.000"), e.status, e.has, e.offered, e.version, e.message)
}

// storedEntries lists every entry the till holds (GET /receiptd/entries,
// paged) by queueId, and sums /receiptd/status's counts.
func storedEntries(ctx context.Context, base string) (map[string]int, int, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	ids := map[string]int{}
	for after := ""; ; {
		var page struct {
			Entries []struct {
				QueueID string `json:"queueId"`
			} `json:"entries"`
			Next string `json:"next"`
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/receiptd/entries?limit=1000&after="+url.QueryEscape(after), nil)
		if err != nil {
			return nil, 0, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, 0, err
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		_ = resp.Body.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("entries: %w", err)
		}
		for _, e := range page.Entries {
			ids[e.QueueID]++
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	counts, err := statusCounts(ctx, c, base)
	if err != nil {
		return nil, 0, err
	}
	total := 0
	for _, v := range counts {
		total += v
	}
	return ids, total, nil
}

// switchResult is every round of the step.
type switchResult struct {
	binaries string
	rounds   []*switchRound
}

// runSwitch builds the releases and runs switchFlags.rounds rounds for
// each way of switchFlags.via, offer and apply alternating.
func (b *bench) runSwitch(ctx context.Context, rounds int) (switchResult, error) {
	var res switchResult
	if runtime.GOOS != "linux" {
		return res, errors.New("switch: the switch to a new version is built on Linux only")
	}
	t0 := time.Now()
	rel, err := buildSwitch(ctx, b.dir)
	if err != nil {
		return res, err
	}
	res.binaries = fmt.Sprintf("receiptd 1.0.0 and 1.1.0 built from this tree in %s; the release file %s (%s) signed with a key made for this run",
		time.Since(t0).Round(100*time.Millisecond), filepath.Base(rel.file), mib(int64(len(rel.body))))
	var ways []string
	for _, w := range strings.Split(switchFlags.via, ",") {
		if w = strings.TrimSpace(w); w != "offer" && w != "apply" {
			return res, fmt.Errorf("switch: -switch-via %q: offer, apply or offer,apply", switchFlags.via)
		}
		ways = append(ways, strings.TrimSpace(w))
	}
	for i := range rounds {
		for _, w := range ways {
			fmt.Fprintf(os.Stderr, "%s  switch round %d by %s\n", time.Now().Format("15:04:05"), i+1, w)
			r, err := b.runSwitchRound(ctx, rel, w, i+1)
			if err != nil {
				return res, err
			}
			res.rounds = append(res.rounds, r)
		}
	}
	return res, nil
}

// switchOnly runs the switch step alone and prints its report.
func (b *bench) switchOnly(ctx context.Context) error {
	host, _ := os.Hostname()
	started, before := time.Now(), loadAvg()
	r, err := b.runSwitch(ctx, switchFlags.rounds)
	if err != nil {
		return err
	}
	fmt.Printf("receiptd-bench -switch-only %s on %s (%s/%s, %d CPUs); load average before: %s, after: %s; took %s\n\n",
		started.UTC().Format(time.RFC3339), host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), before, loadAvg(),
		time.Since(started).Round(time.Second))
	fmt.Print(r.report())
	return nil
}
