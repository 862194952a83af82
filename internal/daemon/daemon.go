package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/cache"
	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/fleet"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/metrics"
	"github.com/receiptd/receiptd/internal/posapi"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/syncer"
)

// The concrete types handed to the worker and the cache satisfy their
// interfaces. The checks live here, where they meet: client and queue
// cannot import syncer or cache, which import them.
var (
	_ syncer.Upstream = (*client.Client)(nil)
	_ syncer.Queue    = (*queue.Queue)(nil)
	_ cache.Upstream  = (*client.Client)(nil)
)

// Daemon is a wired receiptd, ready to Run once.
type Daemon struct {
	cfg       config.Config
	log       *zap.Logger
	st        *store.Store
	q         *queue.Queue
	worker    *syncer.Worker
	answers   *syncer.Mailbox
	cache     *cache.Cache
	posapi    *posapi.Watcher
	backups   *backup.Scheduler
	api       *api.Server
	fleet     *fleet.Pusher // nil: the push is off
	listeners []net.Listener
	running   atomic.Bool // Run has started every loop; see Ready

	markerEvery time.Duration // identityLoop's wait after a commit; defaultMarkerEvery
}

// New opens the database, binds the listeners and wires every component.
// It starts no goroutine. Errors name their cause: the database file for a
// damaged database, "token" for a non-loopback address without one, and a
// *Refusal with the key and the next step for a database another receiptd
// holds, a data_dir receiptd may not write and a listen address in use.
func New(cfg config.Config, log *zap.Logger, version string) (*Daemon, error) {
	return build(cfg, log, version, supervised{})
}

// supervised is what a Supervisor gives the Daemons it builds.
type supervised struct {
	// listeners, when not nil, are served instead of binding new ones:
	// the Supervisor's, which outlive the Daemon.
	listeners []net.Listener
	// control, when not nil, is reported by /receiptd/status and the
	// metrics: the OpAMP client outlives the Daemon too.
	control *control.Client
	// metrics, when not nil, are the Supervisor's, which outlive the
	// Daemon, so that no counter starts again from zero at a swap; build
	// re-points their watches at the new Daemon (metrics.Unwatch).
	metrics *metrics.Metrics
	// sims, when not nil, are the Supervisor's answers to "is base_url
	// the simulator?", so a swap does not ask again; nil: ask afresh.
	sims *simAnswers
	// carried, when not nil, is what the Daemon this one replaces knew
	// (carry): the new one goes on from it.
	carried *carried
	// updater, when not nil, takes the update routes (the Supervisor).
	updater api.Updater
	// noMigrate: this process is a release on probation; its store never
	// migrates the database (store.Options.NoMigrate).
	noMigrate bool
}

// build is New as a Supervisor asks for it.
func build(cfg config.Config, log *zap.Logger, version string, sv supervised) (_ *Daemon, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	d := &Daemon{cfg: cfg, log: log, markerEvery: defaultMarkerEvery}
	defer func() {
		if err != nil {
			d.closeAll()
		}
	}()
	// store.OpenDir creates a missing data directory, fsyncing each new
	// directory's parent so that its name survives a power cut.
	m := sv.metrics
	if m == nil {
		m = metrics.New()
	} else {
		m.Unwatch() // the Daemon before has stopped (Supervisor.Apply)
	}
	path := layout.DB(cfg.DataDir)
	d.st, err = store.OpenDir(cfg.DataDir, store.Options{OnCommit: m.Commit, SkipCheckOnOpen: skipFullCheck(path), NoMigrate: sv.noMigrate})
	if err != nil {
		return nil, openRefusal(cfg.DataDir, err)
	}
	if fileutil.UnsafeNoSync || fileutil.UnsafeNoDirSync {
		log.Error("UNSAFE TEST BUILD: commits or directories are not fsynced, a power cut loses acknowledged receipts",
			zap.Bool("nosync", fileutil.UnsafeNoSync), zap.Bool("nodirsync", fileutil.UnsafeNoDirSync))
	}
	if d.q, err = queue.Open(context.Background(), d.st, queue.Options{MaxAmbiguous: cfg.Sync.MaxAmbiguous,
		LogDir: layout.WAL(cfg.DataDir)}); err != nil {
		return nil, openRefusal(cfg.DataDir, fmt.Errorf("open queue: %w", err))
	}
	followSimulator(context.Background(), &d.cfg.Upstream, sv.sims, log.Named("upstream"))
	cfg = d.cfg
	cc := clientConfig(cfg.Upstream)
	// Every answer's Date header tells the watcher the tax service's
	// clock; d.posapi is set below, before anything is sent.
	cc.OnTiming = func(t client.Timing) { d.posapi.ObserveTiming(t) }
	up, err := client.New(cc)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	d.posapi = posapi.New(up, posapiConfig(cfg.PosAPI, cfg.Upstream.BaseURL), log, m)
	if sv.carried != nil {
		d.posapi.Resume(sv.carried.posapi) // taken only for the same PosAPI
	}
	d.answers = syncer.NewMailbox(mailboxConfig(cfg.Accept), log, m)
	sc := syncConfig(cfg)
	sc.Answers, sc.Limits = d.answers, d.posapi
	d.worker = syncer.New(d.q, up, sc, log, m)
	cacheCfg := cacheConfig(cfg.Cache)
	cacheCfg.OnInfo = func(body []byte) { _ = d.posapi.ObserveInfo(body) } // an answer without the reserve changes nothing
	if d.cache, err = cache.New(context.Background(), d.st, up, cacheCfg, log, m); err != nil {
		return nil, fmt.Errorf("open lookup cache: %w", err)
	}
	m.WatchQueue(d.queueStats)
	m.WatchAnswers(d.answers.Held)
	m.WatchLog(d.q.LogStats)
	m.WatchStore(func() (bool, bool) {
		h := d.st.Health()
		_, logFull := d.q.LogFull()
		return h.DiskFull != "" || logFull != nil, h.Failed != ""
	})
	d.backups = d.newBackups(m)
	d.watchUpdate(m, version)
	if err := m.SetBuildInfo(version); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if err := d.newFleet(m, sv.carried); err != nil {
		return nil, err
	}
	if d.api, err = d.newAPI(m, version, sv.control, sv.updater); err != nil {
		return nil, err
	}
	if err := d.listen(sv.listeners); err != nil {
		return nil, err
	}
	return d, nil
}

// FullCheckLimit is the largest database (in bytes in use, store.UsedSize,
// not the file's padded size) that is walked page by page at start-up. The walk touches every page, so on a large backlog it costs
// start-up time and resident memory (230 MiB and 0.3 s at 100k entries);
// above the limit only bbolt's own checks run at open (meta page checksums,
// which catch a torn or foreign file).
const FullCheckLimit = 32 << 20

func skipFullCheck(path string) bool {
	used, err := store.UsedSize(path)
	return err == nil && used > FullCheckLimit
}

// newAPI builds the local API server from the config; ctl, when not nil,
// is the head office channel it and the metrics report.
func (d *Daemon) newAPI(m *metrics.Metrics, version string, ctl *control.Client, upd api.Updater) (*api.Server, error) {
	loc, err := d.cfg.Accept.Location()
	if err != nil {
		return nil, fmt.Errorf("accept.timezone: %w", err)
	}
	var ctlStatus func() control.Status
	if ctl != nil {
		ctlStatus = ctl.Status
		if err := m.WatchControl(ctl.Stats); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	rules, err := d.cfg.Accept.Rules()
	if err != nil {
		return nil, fmt.Errorf("accept.skip_rules: %w", err)
	}
	return api.New(api.Deps{
		Store: d.st, Queue: d.q, Worker: d.worker, Answers: d.answers, Lookups: d.cache.Handler(),
		Metrics: m, Log: d.log, NoteTIN: d.cache.NoteTIN, Freshness: d.cache.Freshness,
		Warmth: d.cache.Warmth, PosAPI: d.posapi, Backup: d.backups.Status,
		Fleet: d.fleetState, Control: ctlStatus, Update: upd, UpdateState: d.updateState,
	}, api.Options{
		Wait: d.cfg.Accept.Wait.Duration, MaxWait: d.cfg.Accept.MaxWait.Duration,
		Token: d.cfg.Auth.Token.Reveal(), MetricsToken: d.cfg.Auth.MetricsToken.Reveal(), AllowedHosts: d.cfg.Auth.AllowedHosts, Location: loc,
		UnsentWarn: d.cfg.Alerts.UnsentWarn.Duration, UnsentCritical: d.cfg.Alerts.UnsentCritical.Duration, OutageCritical: d.cfg.Alerts.OutageCriticalAfter.Duration,
		Version: version, ShutdownTimeout: d.cfg.ShutdownTimeout.Duration,
		// While the tax service is down the worker probes at most
		// max_backoff apart: a POS asked to come back then finds news.
		QueuedAnswer: d.cfg.Accept.QueuedAnswer, RetryAfter: d.cfg.Sync.MaxBackoff.Duration,
		MaxConns: d.cfg.MaxConnections, Rules: rules,
		LogFile: d.cfg.Log.File, LogTerminal: logsToTerminal(d.cfg.Log.File),
	}), nil
}

// listen binds the TCP listener and, when configured, the Unix socket;
// or, given lns, serves on those (after the same check of the token).
func (d *Daemon) listen(lns []net.Listener) error {
	if d.cfg.Listen != "" {
		if err := api.CheckListen(d.cfg.Listen, d.cfg.Auth.Token.Reveal()); err != nil {
			return err
		}
	}
	if lns != nil {
		d.listeners = lns
		return nil
	}
	if d.cfg.Listen != "" {
		ln, err := net.Listen("tcp", d.cfg.Listen)
		if err != nil {
			return listenRefusal("listen", d.cfg.Listen, err)
		}
		d.listeners = append(d.listeners, ln)
	}
	if d.cfg.ListenUnix != "" {
		ln, err := api.ListenUnix(d.cfg.ListenUnix)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", d.cfg.ListenUnix, err)
		}
		d.listeners = append(d.listeners, ln)
	}
	if len(d.listeners) == 0 {
		return errors.New("nothing to listen on: set listen or listen_unix")
	}
	return nil
}

// URL is the base URL of the TCP listener ("" without one).
func (d *Daemon) URL() string {
	for _, ln := range d.listeners {
		if ln.Addr().Network() == "tcp" {
			return "http://" + ln.Addr().String()
		}
	}
	return ""
}

// DBPath is the database file's path.
func (d *Daemon) DBPath() string { return d.st.Path() }

// Run serves until ctx ends, then shuts down: the listeners stop taking
// requests, sends in flight get up to shutdown_timeout to finish and be
// recorded, and the database is closed. A listener that fails stops the
// daemon the same way, and Run returns its error, so a service manager
// restarts receiptd instead of leaving it up but unreachable. Run may be
// called once.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, len(d.listeners))
	for _, ln := range d.listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.api.Serve(ctx, ln); err != nil {
				errs <- fmt.Errorf("serve %s: %w", ln.Addr(), err)
				stop()
			}
		}()
	}
	start := func(loop func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
	start(d.applyLoop)
	start(d.worker.Run)
	start(d.cache.Run)
	start(d.posapi.Run)
	start(d.pruneLoop)
	start(d.identityLoop)
	start(d.backups.Loop)
	if d.fleet != nil {
		start(d.fleet.Run)
	}
	d.api.SetReady(true)
	d.running.Store(true)
	d.log.Info("receiptd ready", zap.String("url", d.URL()), zap.String("db", d.st.Path()),
		zap.String("upstream", d.cfg.Upstream.BaseURL))

	<-ctx.Done()
	d.running.Store(false)
	d.api.SetReady(false)
	d.log.Info("shutting down", zap.Duration("timeout", d.cfg.ShutdownTimeout.Duration))
	wg.Wait()
	close(errs)
	err := errors.Join(drain(errs)...)
	if cerr := d.q.Close(context.Background()); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if cerr := d.st.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close database: %w", cerr))
	}
	d.log.Info("stopped")
	return err
}

func drain(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// applyLoop applies the write-ahead log's records to the database file in
// batches. It ends early only when the store refuses writes for good
// (then nothing more is acknowledged either).
func (d *Daemon) applyLoop(ctx context.Context) {
	if err := d.q.ApplyLoop(ctx); err != nil {
		d.log.Error("cannot apply accepted receipts to the database; receiptd acknowledges no more", zap.Error(err))
	}
}

// pruneLoop removes finished entries older than retention.keep.
func (d *Daemon) pruneLoop(ctx context.Context) {
	t := time.NewTicker(d.cfg.Retention.PruneInterval.Duration)
	defer t.Stop()
	for {
		n, err := d.q.Prune(ctx, time.Now().Add(-d.cfg.Retention.Keep.Duration))
		switch {
		case err != nil && ctx.Err() == nil:
			d.log.Error("prune finished entries", zap.Error(err))
		case n > 0:
			d.log.Info("pruned finished entries", zap.Int("entries", n), zap.Duration("keep", d.cfg.Retention.Keep.Duration))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// queueStats feeds the queue gauges at scrape time.
func (d *Daemon) queueStats() (map[string]int, time.Duration, error) {
	counts, err := d.q.Counts()
	if err != nil {
		return nil, 0, err
	}
	out := make(map[string]int, len(counts))
	for s, n := range counts {
		out[string(s)] = n
	}
	oldest, ok, err := d.q.OldestUnsent()
	if err != nil || !ok {
		return out, 0, err
	}
	return out, d.worker.UnsentAge(oldest), nil
}

// closeAll releases what New acquired when New fails.
func (d *Daemon) closeAll() {
	for _, ln := range d.listeners {
		_ = ln.Close()
	}
	_ = d.fleet.Close()
	if d.q != nil {
		_ = d.q.Close(context.Background())
	}
	if d.st != nil {
		_ = d.st.Close()
	}
}

// logsToTerminal reports whether the log goes to a terminal a person
// watches: no log.file, and standard error not the service manager's
// journal (a Windows service always has a log.file).
func logsToTerminal(file string) bool {
	return file == "" && !stderrIsJournal()
}
