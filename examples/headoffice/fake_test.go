package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// fakeTill is a till as the head office sees one over OpAMP, on
// opamp-go's real client: it describes itself as receiptd does, takes
// remote configs, and reports the package statuses a test makes it
// report. It never syncs a package: the test decides what happens.
type fakeTill struct {
	uid      string
	oc       client.OpAMPClient
	pkgs     *reportedStatuses
	web      *http.Client // downloads
	stopOnce sync.Once
	mu       sync.Mutex
	version  string
	hash     []byte // agent_has_hash: the file installed
	shop     string
	offers   []*protobufs.PackagesAvailable // every PackagesAvailable received, in order
	configs  map[string]bool                // hashes (hex) of the remote configs received
}

// tillOptions describes a fake till; http: HTTP polling, else WebSocket.
type tillOptions struct {
	uid     string
	version string
	shop    string
	http    bool
	// pkgs are the statuses it reported before, as a till keeps them
	// across a restart; nil: none.
	pkgs *reportedStatuses
	// ca is the head office's certificate, for wss:// and https://.
	ca *x509.CertPool
}

// startTill connects a fake till to the head office's OpAMP URL (ws://)
// until the test ends.
func startTill(t *testing.T, opampURL string, o tillOptions) *fakeTill {
	t.Helper()
	f := &fakeTill{uid: o.uid, version: o.version, shop: o.shop, pkgs: o.pkgs, configs: map[string]bool{}}
	if f.pkgs == nil {
		f.pkgs = &reportedStatuses{}
	}
	var tlsConfig *tls.Config
	f.web = http.DefaultClient
	if o.ca != nil {
		tlsConfig = &tls.Config{RootCAs: o.ca, MinVersion: tls.VersionTLS12}
		f.web = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	}
	url := opampURL
	if o.http {
		poller := client.NewHTTP(nil)
		poller.SetPollingInterval(50 * time.Millisecond)
		f.oc, url = poller, "http"+strings.TrimPrefix(opampURL, "ws")
	} else {
		f.oc = client.NewWebSocket(nil)
	}
	require.NoError(t, f.oc.SetAgentDescription(describe(o.version, o.shop)))
	uid, err := uuid.Parse(o.uid)
	require.NoError(t, err)
	require.NoError(t, f.oc.Start(context.Background(), types.StartSettings{
		OpAMPServerURL:        url,
		TLSConfig:             tlsConfig,
		InstanceUid:           types.InstanceUid(uid),
		PackagesStateProvider: f.pkgs,
		// opamp-go's SetCapabilities refuses the package capabilities
		// before Start has the PackagesStateProvider, and Start refuses
		// the provider without them: only this (deprecated) field works.
		Capabilities: protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig |
			protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages |
			protobufs.AgentCapabilities_AgentCapabilities_ReportsPackageStatuses,
		Callbacks: types.Callbacks{OnMessage: f.onMessage},
	}))
	t.Cleanup(f.stop)
	return f
}

// stop disconnects the till; it may be called more than once (opamp-go's
// Stop may not).
func (f *fakeTill) stop() {
	f.stopOnce.Do(func() { _ = f.oc.Stop(context.Background()) })
}

func describe(version, shop string) *protobufs.AgentDescription {
	str := func(k, v string) *protobufs.KeyValue {
		return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
	}
	return &protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{str("service.name", "receiptd"), str("service.version", version), str("host.name", "till")},
		NonIdentifyingAttributes: []*protobufs.KeyValue{str("os.type", "linux"), str("shop", shop)},
	}
}

func (f *fakeTill) onMessage(_ context.Context, m *types.MessageData) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.PackagesAvailable != nil {
		f.offers = append(f.offers, proto.Clone(m.PackagesAvailable).(*protobufs.PackagesAvailable))
	}
	if rc := m.RemoteConfig; rc != nil {
		f.configs[hexOf(rc.ConfigHash)] = true
		_ = f.oc.SetRemoteConfigStatus(&protobufs.RemoteConfigStatus{
			LastRemoteConfigHash: rc.ConfigHash, Status: protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED,
		})
	}
}

// offer is the last PackagesAvailable received, or nil.
func (f *fakeTill) offer() *protobufs.PackagesAvailable {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.offers) == 0 {
		return nil
	}
	return f.offers[len(f.offers)-1]
}

// offeredReceiptd reports whether any offer received named receiptd.
func (f *fakeTill) offeredReceiptd() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.offers {
		if o.Packages[packageName] != nil {
			return true
		}
	}
	return false
}

func (f *fakeTill) sawConfig(hash string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.configs[hash]
}

// report reports receiptd's status for the last offer, as the till does.
func (f *fakeTill) report(t *testing.T, status protobufs.PackageStatusEnum, message string) {
	t.Helper()
	o := f.offer()
	require.NotNil(t, o, "till %s was offered nothing", f.uid)
	p := o.Packages[packageName]
	f.mu.Lock()
	has, hasHash := f.version, f.hash
	f.mu.Unlock()
	s := &protobufs.PackageStatuses{
		ServerProvidedAllPackagesHash: o.AllPackagesHash,
		Packages: map[string]*protobufs.PackageStatus{packageName: {
			Name: packageName, AgentHasVersion: has, AgentHasHash: hasHash, ServerOfferedVersion: p.Version, ServerOfferedHash: p.Hash,
			Status: status, ErrorMessage: message,
		}},
	}
	require.NoError(t, f.pkgs.SetLastReportedStatuses(s)) // kept, as a till keeps them across a restart
	require.NoError(t, f.oc.SetPackageStatuses(s))
}

// install downloads the offered file, checks it against the offer's
// content_hash, and reports INSTALLING, then, running the new version,
// INSTALLED; it returns the file.
func (f *fakeTill) install(t *testing.T) []byte {
	t.Helper()
	file := f.download(t)
	f.report(t, protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "")
	p := f.offer().Packages[packageName]
	f.mu.Lock()
	f.version, f.hash = p.Version, p.File.ContentHash
	shop := f.shop
	f.mu.Unlock()
	require.NoError(t, f.oc.SetAgentDescription(describe(p.Version, shop)))
	f.report(t, protobufs.PackageStatusEnum_PackageStatusEnum_Installed, "")
	return file
}

func (f *fakeTill) download(t *testing.T) []byte {
	t.Helper()
	o := f.offer()
	require.NotNil(t, o)
	p := o.Packages[packageName]
	require.NotNil(t, p, "the last offer to %s names no receiptd", f.uid)
	resp, err := f.web.Get(p.File.DownloadUrl)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, p.File.DownloadUrl)
	file, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	sum := sha256.Sum256(file)
	require.Equal(t, hexOf(p.File.ContentHash), hexOf(sum[:]), "the file served is the one offered")
	return file
}

// barrier makes sure every till has taken an answer the head office
// computed after everything before it: a config pushed to all tills now
// travels with whatever else the head office owes each (answerFor), so
// once each has seen it, an offer owed to any would have come with it.
func barrier(t *testing.T, admin string, tills ...*fakeTill) {
	t.Helper()
	frag := fmt.Sprintf("# barrier %d\n", barriers.Add(1))
	code, body := push(t, admin, "", frag)
	require.Equal(t, http.StatusOK, code, body)
	hash := hexOf(fragmentHash([]byte(frag)))
	for _, f := range tills {
		require.Eventually(t, func() bool { return f.sawConfig(hash) }, 10*time.Second, 10*time.Millisecond,
			"till %s takes the barrier's config", f.uid)
	}
}

var barriers atomic.Int64

// reportedStatuses is the PackagesStateProvider opamp-go demands of a
// client that accepts packages. The fake tills never sync, so only the
// statuses are kept; the rest refuses.
type reportedStatuses struct {
	mu   sync.Mutex
	last *protobufs.PackageStatuses
}

var errNeverSyncs = errors.New("this fake till never syncs packages")

func (r *reportedStatuses) LastReportedStatuses() (*protobufs.PackageStatuses, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, nil
}

func (r *reportedStatuses) SetLastReportedStatuses(s *protobufs.PackageStatuses) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = s
	return nil
}

func (*reportedStatuses) AllPackagesHash() ([]byte, error)       { return nil, errNeverSyncs }
func (*reportedStatuses) SetAllPackagesHash([]byte) error        { return errNeverSyncs }
func (*reportedStatuses) Packages() ([]string, error)            { return nil, errNeverSyncs }
func (*reportedStatuses) DeletePackage(string) error             { return errNeverSyncs }
func (*reportedStatuses) FileContentHash(string) ([]byte, error) { return nil, errNeverSyncs }
func (*reportedStatuses) PackageState(string) (types.PackageState, error) {
	return types.PackageState{}, errNeverSyncs
}
func (*reportedStatuses) SetPackageState(string, types.PackageState) error { return errNeverSyncs }
func (*reportedStatuses) CreatePackage(string, protobufs.PackageType) error {
	return errNeverSyncs
}
func (*reportedStatuses) UpdateContent(context.Context, string, io.Reader, []byte, []byte) error {
	return errNeverSyncs
}
