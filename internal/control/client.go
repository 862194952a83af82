package control

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"go.uber.org/zap"

	taxclient "github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/config"
)

// Applier puts a merged configuration into effect in place. A nil error
// means it is applied and the daemon is ready with it (within
// control.rollback_after); an error means it was not, and the previous
// configuration is back in effect: the error says why, for the head
// office. Apply is never called twice at once.
type Applier interface {
	Apply(ctx context.Context, cfg config.Config) error
}

// Options are what New needs. Start, Version, Log and Applier are
// required.
type Options struct {
	// Start is the configuration the daemon started with (StartConfig's).
	Start config.Merged
	// OwnPath is the till's own config file, re-read for each fragment;
	// "" when the till has none.
	OwnPath string
	// Own is the till's own configuration when OwnPath is "": the base a
	// fragment is laid over (receiptd demo's, made in code; nil: the
	// defaults). Ignored when OwnPath is set: the file is read again.
	Own *config.Config
	// Version is receiptd's version (service.version).
	Version string
	Log     *zap.Logger
	Applier Applier
	// Health reports the daemon's health; nil: healthy, "running".
	Health func() Health
	// PosNo returns PosAPI's posNo, "" while unknown; nil: never known.
	PosNo func() string
	// HostName is host.name; "" takes os.Hostname.
	HostName string
	// ConnectTimeout bounds the opening of a connection to the head
	// office (transports); zero: DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Updates, when not nil, takes the releases the head office offers
	// (packages.go); nil: updates are off and the till does not say it
	// accepts packages.
	Updates *Updates
	// ApplyEvery is the least time between two configs that change the
	// daemon (each costs a rebuild), and the first wait after one the
	// daemon refused; zero: DefaultApplyEvery. MaxApplyBackoff bounds the
	// wait after refusals in a row, doubling from ApplyEvery; zero:
	// DefaultMaxApplyBackoff.
	ApplyEvery, MaxApplyBackoff time.Duration
}

// healthEvery is how often Health and the description are read, and
// sent when they changed.
const healthEvery = 5 * time.Second

// Client is the till's OpAMP agent. New prepares it; Run runs it.
type Client struct {
	opts    Options
	ctl     config.Control // from the start configuration: [control] is never remote
	disk    disk
	uid     uuid.UUID
	started time.Time
	log     *zap.Logger

	wake chan struct{} // a fragment is waiting in next

	mu        sync.Mutex
	effective config.Merged
	status    Status
	connected bool
	triedOnce bool // a first attempt ended: later failures are logged only after a success
	next      *protobufs.AgentRemoteConfig
	// held is the server hash (hex) of the config applyLoop holds until
	// its rebuild may start (gate); "" when none waits.
	held string
	// applying is the server hash (hex) of the config applyLoop is
	// applying now; "" between configs. A status APPLYING read from disk
	// with no apply running (receiptd stopped mid-apply) does not hold
	// the config back: it is applied again.
	applying string
	opamp    client.OpAMPClient
	pkgs     *packages // nil: updates off
	// sendMu guards sentDesc and sentHealth, the description and health
	// last handed to the OpAMP client: a change is sent, whenever it
	// happens. It is never held by a callback of the OpAMP client.
	sendMu     sync.Mutex
	sentDesc   *protobufs.AgentDescription
	sentHealth *protobufs.ComponentHealth
}

// New reads (or creates) the instance UID and the last remote config
// status from the data directory. It starts nothing.
func New(opts Options) (*Client, error) {
	if opts.Log == nil || opts.Applier == nil {
		return nil, errors.New("control: Log and Applier are required")
	}
	cfg := opts.Start.Config
	d := newDisk(cfg.DataDir)
	uid, err := d.instanceUID()
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	rc, err := d.status()
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if opts.HostName == "" {
		opts.HostName, _ = os.Hostname()
	}
	if opts.ApplyEvery <= 0 {
		opts.ApplyEvery = DefaultApplyEvery
	}
	if opts.MaxApplyBackoff <= 0 {
		opts.MaxApplyBackoff = DefaultMaxApplyBackoff
	}
	c := &Client{
		opts: opts, ctl: cfg.Control, disk: d, uid: uid, started: time.Now(),
		log:       opts.Log.Named("control"),
		wake:      make(chan struct{}, 1),
		effective: opts.Start,
		status:    Status{URL: cfg.Control.OpAMPURL, RemoteConfig: rc, Started: time.Now()},
	}
	if c.pkgs, err = newPackages(opts.Updates, c); err != nil {
		return nil, err
	}
	return c, nil
}

// InstanceUID is the till's OpAMP instance UID.
func (c *Client) InstanceUID() string { return c.uid.String() }

// Status returns the channel's state. Connected turns false once the
// server has not answered for three poll_every, however the connection
// was lost.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.status
	s.Connected = c.connected && time.Since(s.LastContact) <= 3*c.ctl.PollEvery.Duration
	return s
}

// Run connects to control.opamp_url and serves the channel until ctx
// ends, then stops the OpAMP client and every goroutine it started. With
// the channel off it returns nil at once. An error means the client could
// not start (a bad CA file). Run may be called again once it returned (a
// switch to a new version stops the channel, a rollback starts it again):
// each run is a new OpAMP client, told everything afresh.
func (c *Client) Run(ctx context.Context) error {
	if !c.ctl.Enabled() {
		return nil
	}
	oc, settings, err := c.prepare()
	if err != nil {
		return err
	}
	if err := oc.Start(ctx, settings); err != nil {
		return fmt.Errorf("control: start OpAMP client: %w", err)
	}

	c.mu.Lock()
	c.opamp = oc
	c.mu.Unlock()
	c.log.Info("connecting to the head office", zap.String("url", c.ctl.OpAMPURL), zap.String("instanceUID", c.uid.String()))

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.applyLoop(ctx) }()
	go func() { defer wg.Done(); c.healthLoop(ctx, oc) }()
	if c.pkgs.on() {
		wg.Add(1)
		go func() { defer wg.Done(); c.packageLoop(ctx, oc) }()
	}
	<-ctx.Done()
	wg.Wait()
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := oc.Stop(stopCtx); err != nil {
		c.log.Debug("stop OpAMP client", zap.Error(err))
	}
	return nil
}

// prepare builds the OpAMP client for the URL's transport and its start
// settings.
func (c *Client) prepare() (client.OpAMPClient, types.StartSettings, error) {
	u, err := url.Parse(c.ctl.OpAMPURL)
	if err != nil {
		return nil, types.StartSettings{}, fmt.Errorf("control: control.opamp_url: %w", err)
	}
	logger := opampLogger{l: c.log.Sugar(), refused: c.refused}
	c.sendMu.Lock()
	c.sentDesc, c.sentHealth = nil, nil // a new client has been told nothing
	c.sendMu.Unlock()
	var oc client.OpAMPClient
	if u.Scheme == "ws" || u.Scheme == "wss" {
		oc = client.NewWebSocket(logger)
	} else {
		oc = client.NewHTTP(logger)
	}
	if err := c.sendDescription(oc); err != nil {
		return nil, types.StartSettings{}, fmt.Errorf("control: %w", err)
	}
	if err := c.sendHealth(oc); err != nil {
		return nil, types.StartSettings{}, fmt.Errorf("control: %w", err)
	}
	// After the health: the capability to report it needs one.
	caps := baseCaps
	var provider types.PackagesStateProvider
	if c.pkgs.on() {
		provider = stateProvider{c.pkgs}
		c.pkgs.sendMu.Lock()
		c.pkgs.sent = nil
		c.pkgs.sendMu.Unlock()
	}
	if err := oc.SetCapabilities(&caps); err != nil {
		return nil, types.StartSettings{}, fmt.Errorf("control: %w", err)
	}
	tlsConfig, err := c.tlsConfig(u.Scheme)
	if err != nil {
		return nil, types.StartSettings{}, err
	}
	connect := c.opts.ConnectTimeout
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	httpClient, dialer, err := c.transports(connect)
	if err != nil {
		return nil, types.StartSettings{}, err
	}
	header := http.Header{}
	for k, v := range c.ctl.Headers {
		header.Set(k, v.Reveal())
	}
	poll := c.ctl.PollEvery.Duration
	return oc, types.StartSettings{
		OpAMPServerURL:        c.ctl.OpAMPURL,
		Header:                header,
		TLSConfig:             tlsConfig,
		HTTPClient:            httpClient,
		WebSocketDialer:       dialer,
		MaxMessageBytes:       MaxMessage,
		InstanceUid:           types.InstanceUid(c.uid),
		Callbacks:             c.callbacks(),
		RemoteConfigStatus:    c.remoteStatusProto(),
		HeartbeatInterval:     &poll,
		PackagesStateProvider: provider,
		// opamp-go v0.23 takes the package capabilities only here
		// (deprecated for SetCapabilities, which refuses them until Start
		// has set the PackagesStateProvider, while Start refuses the
		// provider without them).
		Capabilities: startCaps(c.pkgs.on()),
	}, nil
}

// baseCaps are the capabilities of every till.
const baseCaps = protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
	protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsHeartbeat

// startCaps are the capabilities Start is given: the package ones when
// the till takes updates, else none (SetCapabilities' stand).
func startCaps(updates bool) protobufs.AgentCapabilities {
	if !updates {
		return 0
	}
	return baseCaps | packageCaps
}

// tlsConfig trusts the system's CAs and control.ca_file's, as every
// connection to a remote service does (taxclient.TLSConfig).
func (c *Client) tlsConfig(scheme string) (*tls.Config, error) {
	if scheme != "wss" && scheme != "https" {
		return nil, nil
	}
	cfg, err := taxclient.TLSConfig(c.ctl.CAFile)
	if err != nil {
		return nil, fmt.Errorf("control: control.ca_file: %w", err)
	}
	return cfg, nil
}

func (c *Client) identity() Identity {
	c.mu.Lock()
	labels := c.effective.Config.Fleet.Labels
	c.mu.Unlock()
	id := Identity{InstanceID: c.uid.String(), Version: c.opts.Version, HostName: c.opts.HostName, Labels: labels}
	if c.opts.PosNo != nil {
		id.PosNo = c.opts.PosNo()
	}
	return id
}

func (c *Client) health() Health {
	if c.opts.Health == nil {
		return Health{Healthy: true, Status: "running"}
	}
	return c.opts.Health()
}

// opampLogger sends opamp-go's messages to zap at debug level: it logs
// every failed attempt of an offline till as an error, and the channel's
// own log lines (connected, lost, each fragment's fate) say what matters.
// A server's refusal (an HTTP status that is not retried, the status of a
// refused WebSocket handshake) reaches no callback of opamp-go, only its
// log: refused is told of it, for Status.
type opampLogger struct {
	l       *zap.SugaredLogger
	refused func(msg string)
}

func (l opampLogger) Debugf(_ context.Context, format string, v ...any) { l.l.Debugf(format, v...) }
func (l opampLogger) Errorf(_ context.Context, format string, v ...any) {
	l.l.Debugf(format, v...)
	msg := fmt.Sprintf(format, v...)
	if strings.HasPrefix(msg, "invalid response from server") || strings.HasPrefix(msg, "Server responded with status=") {
		l.refused(msg)
	}
}

// refusedPrefix begins a LastError that is the server's refusal.
const refusedPrefix = "the head office refused the connection: "

// refused records the server's refusal of the till as the channel's
// failure.
func (c *Client) refused(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connected = false
	c.status.LastError = refusedPrefix + msg
	if c.status.FailingSince.IsZero() {
		c.status.FailingSince = time.Now().UTC()
	}
}

// Stats is Status in the shape of metrics.ControlStats:
// m.WatchControl(client.Stats).
func (c *Client) Stats() (connected bool, lastContact float64, failures uint64) {
	s := c.Status()
	if !s.LastContact.IsZero() {
		lastContact = float64(s.LastContact.UnixNano()) / 1e9
	}
	return s.Connected, lastContact, s.Failures
}
