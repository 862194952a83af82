package control

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/update"
)

// PackageName is the top-level package a head office offers a release
// of receiptd as (docs/contract.md, "Updating the fleet").
const PackageName = "receiptd"

// Updates lets the head office offer releases (OpAMP's PackagesAvailable):
// the till announces AcceptsPackages and ReportsPackageStatuses, fetches
// an offer's file, takes it through Till (the checks of update.Policy,
// the copy kept, update.json) and asks Switch to run it. What it reports
// is read from update.json, which only the version that was running
// writes: a release on probation never reports itself installed.
type Updates struct {
	Till release.Till
	// Enabled reports, as the channel connects, whether the daemon
	// switches to releases (daemon.Supervisor.EnableUpdates); nil: it
	// does. Where it does not (receiptd demo), the till does not say it
	// accepts packages.
	Enabled func() bool
	// Switch asks the daemon to switch to the release just staged
	// (daemon.Supervisor.RequestSwitch).
	Switch func() error
}

// Retry waits of an offer that could not be taken yet (a download that
// failed, a switch under way): the first, doubling to the last.
const (
	offerRetryFirst = 5 * time.Second
	offerRetryMax   = 5 * time.Minute
)

// packageOffer is the receiptd package of a PackagesAvailable, as the
// till takes it.
type packageOffer struct {
	offer   update.Offer
	url     string
	allHash []byte // the server's all_packages_hash
}

// fetching is an offer's download in progress, for its status.
type fetching struct {
	version string
	sum     []byte
	have    int64
	total   int64
	err     string // the last attempt's failure; retried
}

// packages is the Client's part of updates; nil when Options.Updates is.
type packages struct {
	upd  Updates
	dl   *downloader
	wake chan struct{}

	mu      sync.Mutex
	pending *packageOffer // the newest offer not handled yet
	// current is the receiptd package of the last PackagesAvailable
	// received (nil: none, or it offered none); offered says one was
	// received since the start. Until then the statuses are update.json's
	// alone.
	current *packageOffer
	offered bool
	// handled is the last offer takeOffer was done with: a refusal in
	// update.json is this offer's only when it is handled (the same file
	// offered again with another signature is checked again).
	handled *packageOffer
	// serverHash is the all_packages_hash of the last offer received:
	// the server reads from it which offer the statuses answer.
	serverHash []byte
	fetch      *fetching

	sendMu sync.Mutex
	sent   *protobufs.PackageStatuses
}

func newPackages(u *Updates, c *Client) (*packages, error) {
	if u == nil {
		return nil, nil
	}
	dl, err := newDownloader(c.ctl, u.Till.DataDir)
	if err != nil {
		return nil, err
	}
	return &packages{upd: *u, dl: dl, wake: make(chan struct{}, 1), serverHash: []byte{}}, nil
}

// on reports whether the till takes releases now.
func (p *packages) on() bool {
	return p != nil && (p.upd.Enabled == nil || p.upd.Enabled())
}

// received takes a PackagesAvailable: its receiptd package becomes the
// offer to handle, replacing one not handled yet. opamp-go's own
// PackagesSyncer is never run: it checks neither hash nor signature and
// reports a package installed as soon as it is stored.
func (p *packages) received(log *zap.Logger, pa *protobufs.PackagesAvailable) {
	if p == nil || pa == nil {
		return
	}
	var o *packageOffer
	for name, pkg := range pa.GetPackages() {
		if name != PackageName || pkg.GetType() != protobufs.PackageType_PackageType_TopLevel {
			log.Warn("the head office offered a package receiptd does not take; ignored", zap.String("package", name))
			continue
		}
		f := pkg.GetFile()
		o = &packageOffer{offer: update.Offer{Version: pkg.GetVersion(), SHA256: f.GetContentHash(), Signature: f.GetSignature()},
			url: f.GetDownloadUrl(), allHash: pa.GetAllPackagesHash()}
	}
	p.mu.Lock()
	p.serverHash = bytes.Clone(pa.GetAllPackagesHash())
	if p.serverHash == nil {
		p.serverHash = []byte{}
	}
	p.pending, p.current, p.offered = o, o, true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// loop handles the offers received, one at a time, the newest first, and
// reports the package's status whenever it changes (update.json is
// written by the switch, in this process or in the parent of a release
// on probation, so it is read again every healthEvery).
func (c *Client) packageLoop(ctx context.Context, oc client.OpAMPClient) {
	p := c.pkgs
	tick := time.NewTicker(healthEvery)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	wait := offerRetryFirst
	for {
		p.mu.Lock()
		o := p.pending
		p.mu.Unlock()
		if o != nil {
			done := c.takeOffer(ctx, oc, o)
			p.mu.Lock()
			if done {
				p.handled = o
				if p.pending == o {
					p.pending = nil
				}
			}
			p.mu.Unlock()
			if done {
				wait = offerRetryFirst
			} else {
				retry.Reset(wait)
				wait = min(2*wait, offerRetryMax)
			}
		}
		c.sendPackages(oc)
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-retry.C:
		case <-tick.C:
			p.mu.Lock()
			waiting := p.pending != nil
			p.mu.Unlock()
			if waiting {
				c.sendPackages(oc)
				continue // the retry timer brings it back
			}
		}
	}
}

// takeOffer handles o and reports whether it is done with: taken,
// refused, or already the till's; false means try again later (a
// download failed, a switch is under way).
func (c *Client) takeOffer(ctx context.Context, oc client.OpAMPClient, o *packageOffer) bool {
	p := c.pkgs
	log := c.log.With(zap.String("release", o.offer.Version))
	st, err := release.ReadState(p.upd.Till.DataDir)
	if err != nil {
		log.Error("the head office offered a release; the update's state cannot be read", zap.Error(err))
		return false
	}
	sum := hex.EncodeToString(o.offer.SHA256)
	if isRunning(p.upd.Till.Running(st), o.offer) {
		return true // what runs: INSTALLED
	}
	if st.Offered != nil && st.Offered.SHA256 == sum && st.Offered.Version == o.offer.Version {
		switch st.Phase {
		case release.Staged, release.Switching, release.Probation, release.Installed, release.RolledBack:
			return true // update.json says what became of it
		}
	}
	if err := p.upd.Till.CheckOffer(o.offer); err != nil {
		if !release.Refusal(err) {
			log.Debug("the head office's release waits", zap.Error(err))
			return false
		}
		log.Warn("the head office's release is refused", zap.Error(err))
		return true
	}
	log.Info("the head office offers a release; fetching it", zap.String("url", redact(o.url)))
	p.setFetch(&fetching{version: o.offer.Version, sum: o.offer.SHA256, total: -1})
	path, err := p.dl.fetch(ctx, o.url, o.offer.SHA256, func(have, total int64) {
		if p.progress(have, total) {
			c.sendPackages(oc)
		}
	})
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("the release could not be fetched; retrying", zap.Error(err))
			p.fetchFailed(err)
		}
		return false
	}
	_, err = p.upd.Till.Take(o.offer, path, "the head office's offer")
	p.setFetch(nil)
	switch {
	case errors.Is(err, release.ErrBusy):
		return false
	case release.Refusal(err):
		_ = os.Remove(path) // refused: not fetched again
		log.Warn("the head office's release is refused", zap.Error(err))
		return true
	case err != nil:
		log.Error("the release could not be taken; retrying", zap.Error(err))
		return false
	}
	_ = os.Remove(path) // a copy is kept in versions/
	if err := p.upd.Switch(); err != nil {
		log.Error("the switch to the release was refused", zap.Error(err))
		if st, rerr := release.ReadState(p.upd.Till.DataDir); rerr == nil && st.Phase == release.Staged {
			st.Enter(release.Refused, "the daemon refused the switch: "+err.Error(), time.Now())
			if werr := st.Write(p.upd.Till.DataDir); werr != nil {
				log.Error("the update's state not recorded", zap.Error(werr))
			}
		}
		return true
	}
	log.Info("the release is verified and kept; the switch is asked for")
	return true
}

func (p *packages) setFetch(f *fetching) {
	p.mu.Lock()
	p.fetch = f
	p.mu.Unlock()
}

// progress records a download's bytes and reports whether its percent
// moved enough to be worth a status.
func (p *packages) progress(have, total int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fetch == nil {
		return false
	}
	before := percent(p.fetch.have, p.fetch.total)
	p.fetch.have, p.fetch.total, p.fetch.err = have, total, ""
	return percent(have, total)-before >= 10 || have == total
}

func (p *packages) fetchFailed(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fetch != nil {
		p.fetch.err = "download failed, retrying: " + err.Error()
	}
}

func percent(have, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return 100 * float64(have) / float64(total)
}

// statuses is what the till reports of its receiptd package: the
// version it runs, and the offer the server made last, with what became
// of it as update.json says (or the download under way). The statuses
// answer the server's last all_packages_hash, so an outcome update.json
// holds of an earlier offer is never reported as this offer's: an offer
// not handled yet is INSTALL_PENDING.
func (p *packages) statuses() (*protobufs.PackageStatuses, error) {
	st, err := release.ReadState(p.upd.Till.DataDir)
	if err != nil {
		return nil, err
	}
	running := p.upd.Till.Running(st)
	ps := &protobufs.PackageStatus{Name: PackageName, AgentHasVersion: running.Version, AgentHasHash: unhex(running.SHA256),
		ServerOfferedVersion: running.Version, ServerOfferedHash: unhex(running.SHA256),
		Status: protobufs.PackageStatusEnum_PackageStatusEnum_Installed}
	p.mu.Lock()
	f, cur, offered, handled, serverHash := p.fetch, p.current, p.offered, p.handled, p.serverHash
	p.mu.Unlock()
	recorded := st.Offered
	if offered && (cur == nil || recorded == nil || recorded.Version != cur.offer.Version ||
		recorded.SHA256 != hex.EncodeToString(cur.offer.SHA256) || (st.Phase == release.Refused && !sameOffer(handled, cur))) {
		recorded = nil // update.json speaks of another offer
	}
	switch {
	case f != nil:
		ps.ServerOfferedVersion, ps.ServerOfferedHash = f.version, f.sum
		ps.Status, ps.ErrorMessage = protobufs.PackageStatusEnum_PackageStatusEnum_Downloading, f.err
		ps.DownloadDetails = &protobufs.PackageDownloadDetails{DownloadPercent: percent(f.have, f.total)}
	case recorded != nil:
		ps.ServerOfferedVersion, ps.ServerOfferedHash = recorded.Version, unhex(recorded.SHA256)
		switch st.Phase {
		case release.Installed, release.Idle:
		case release.RolledBack, release.Refused:
			ps.Status, ps.ErrorMessage = protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, st.Message
		default: // verifying, staged, switching, on probation
			ps.Status, ps.ErrorMessage = protobufs.PackageStatusEnum_PackageStatusEnum_Installing, st.Message
		}
	case cur != nil && !isRunning(running, cur.offer):
		ps.ServerOfferedVersion, ps.ServerOfferedHash = cur.offer.Version, cur.offer.SHA256
		ps.Status = protobufs.PackageStatusEnum_PackageStatusEnum_InstallPending
	}
	return &protobufs.PackageStatuses{Packages: map[string]*protobufs.PackageStatus{PackageName: ps},
		ServerProvidedAllPackagesHash: serverHash}, nil
}

// sameOffer reports whether a and b offer the same file, version and
// signature.
func sameOffer(a, b *packageOffer) bool {
	return a != nil && b != nil && a.offer.Version == b.offer.Version &&
		bytes.Equal(a.offer.SHA256, b.offer.SHA256) && bytes.Equal(a.offer.Signature, b.offer.Signature)
}

// isRunning reports whether o is the version running: the same file, or
// the same version where the running file's hash is not known (the entry
// point's own code).
func isRunning(running release.Version, o update.Offer) bool {
	return running.Version == o.Version && (running.SHA256 == "" || running.SHA256 == hex.EncodeToString(o.SHA256))
}

func unhex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// sendPackages hands the package statuses to oc when they changed.
func (c *Client) sendPackages(oc client.OpAMPClient) {
	p := c.pkgs
	ps, err := p.statuses()
	if err != nil {
		c.log.Debug("read the update's state", zap.Error(err))
		return
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if proto.Equal(ps, p.sent) {
		return
	}
	if err := oc.SetPackageStatuses(ps); err != nil {
		c.log.Debug("report package statuses", zap.Error(err))
		return
	}
	p.sent = ps
}

// stateProvider is the PackagesStateProvider opamp-go requires of an
// agent that accepts packages. receiptd never runs opamp-go's syncer, so
// only the statuses a (re)connection starts from are read here, from
// update.json; the calls only that syncer makes are refused.
type stateProvider struct{ p *packages }

var errNoSyncer = errors.New("receiptd takes packages itself (internal/control/packages.go); opamp-go's syncer is not used")

func (s stateProvider) LastReportedStatuses() (*protobufs.PackageStatuses, error) {
	return s.p.statuses()
}

// SetLastReportedStatuses keeps nothing: update.json is the record.
func (s stateProvider) SetLastReportedStatuses(*protobufs.PackageStatuses) error { return nil }

func (stateProvider) AllPackagesHash() ([]byte, error)       { return nil, errNoSyncer }
func (stateProvider) SetAllPackagesHash([]byte) error        { return errNoSyncer }
func (stateProvider) Packages() ([]string, error)            { return nil, errNoSyncer }
func (stateProvider) DeletePackage(string) error             { return errNoSyncer }
func (stateProvider) FileContentHash(string) ([]byte, error) { return nil, errNoSyncer }
func (stateProvider) PackageState(string) (types.PackageState, error) {
	return types.PackageState{}, errNoSyncer
}
func (stateProvider) SetPackageState(string, types.PackageState) error { return errNoSyncer }
func (stateProvider) CreatePackage(string, protobufs.PackageType) error {
	return errNoSyncer
}
func (stateProvider) UpdateContent(context.Context, string, io.Reader, []byte, []byte) error {
	return errNoSyncer
}

// packageCaps are the capabilities of a till that takes updates.
const packageCaps = protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
	protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses
