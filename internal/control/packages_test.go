package control_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/update"
	"github.com/receiptd/receiptd/internal/update/updatetest"
)

var platform = runtime.GOOS + "/" + runtime.GOARCH

// updatingTill is a till whose client takes releases signed by signer,
// running 1.0.0; switches counts its Switch calls.
type updatingTill struct {
	*till
	dataDir  string
	switches atomic.Int32
}

func startUpdatingTill(t *testing.T, srv *controltest.Server, signer updatetest.Signer) *updatingTill {
	t.Helper()
	ut := &updatingTill{}
	ut.till = startTillOpts(t, srv.WSURL(), "", func(o *control.Options) {
		ut.dataDir = o.Start.Config.DataDir
		o.Updates = &control.Updates{
			Till:   release.Till{DataDir: ut.dataDir, TrustedKeys: []string{signer.PublicKey()}, Binary: "1.0.0"},
			Switch: func() error { ut.switches.Add(1); return nil },
		}
	})
	return ut
}

// serveFile serves body at a loopback URL, as a head office's file
// server would, and returns the URL.
func serveFile(t *testing.T, body []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "receiptd", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/receiptd"
}

// offer is a PackagesAvailable of version with the file served (body),
// its content_hash (hashOf) and its signature (sig).
func offer(t *testing.T, version string, body, hashOf, sig []byte) *protobufs.PackagesAvailable {
	sum := sha256.Sum256(hashOf)
	all := sha256.Sum256(append(sum[:], version...))
	return &protobufs.PackagesAvailable{AllPackagesHash: all[:], Packages: map[string]*protobufs.PackageAvailable{
		control.PackageName: {Type: protobufs.PackageType_PackageType_TopLevel, Version: version, Hash: sum[:],
			File: &protobufs.DownloadableFile{DownloadUrl: serveFile(t, body), ContentHash: sum[:], Signature: sig}},
	}}
}

// receiptdStatus waits until the till reports its receiptd package with
// want as status, and returns it.
func receiptdStatus(t *testing.T, srv *controltest.Server, uid string, want protobufs.PackageStatusEnum) *protobufs.PackageStatus {
	t.Helper()
	var ps *protobufs.PackageStatus
	require.Eventually(t, func() bool {
		a, ok := srv.Agent(uid)
		ps = a.Packages.GetPackages()[control.PackageName]
		return ok && ps.GetStatus() == want
	}, 20*time.Second, 20*time.Millisecond, "want %v, last %v", want, func() string { return ps.String() }())
	return ps
}

// TestOfferedReleaseIsFetchedCheckedAndSwitchedTo: a till with trusted
// keys says it accepts packages; a release offered over OpAMP is fetched,
// checked, kept in versions/ and switched to, reported INSTALLING until
// update.json (written by the version that was running, after the
// probation) says installed, never before.
func TestOfferedReleaseIsFetchedCheckedAndSwitchedTo(t *testing.T) {
	t.Parallel()
	srv := controltest.Start(t)
	signer := updatetest.NewSigner(t)
	tl := startUpdatingTill(t, srv, signer)
	uid := tl.client.InstanceUID()
	a := agent(t, srv, uid, func(a controltest.Agent) bool { return a.Packages != nil })
	require.NotZero(t, a.Capabilities&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages))
	ps := a.Packages.Packages[control.PackageName]
	require.Equal(t, "1.0.0", ps.AgentHasVersion)
	require.Equal(t, protobufs.PackageStatusEnum_PackageStatusEnum_Installed, ps.Status)

	body := []byte("receiptd 1.1.0, the executable")
	pa := offer(t, "1.1.0", body, body, signer.Sign(body, update.Comment("1.1.0", platform)))
	require.Equal(t, 1, srv.Offer(func(a controltest.Agent) bool { return a.UID == uid }, pa))
	ps = receiptdStatus(t, srv, uid, protobufs.PackageStatusEnum_PackageStatusEnum_Installing)
	require.Equal(t, "1.0.0", ps.AgentHasVersion, "not installed while it is being switched to")
	require.Equal(t, "1.1.0", ps.ServerOfferedVersion)
	require.Equal(t, pa.Packages[control.PackageName].File.ContentHash, ps.ServerOfferedHash)
	require.Eventually(t, func() bool { return tl.switches.Load() == 1 }, 10*time.Second, 10*time.Millisecond)

	st, err := release.ReadState(tl.dataDir)
	require.NoError(t, err)
	require.Equal(t, release.Staged, st.Phase)
	kept, err := os.ReadFile(st.Offered.Path)
	require.NoError(t, err)
	require.Equal(t, body, kept)
	require.NoFileExists(t, layout.Download(tl.dataDir, st.Offered.SHA256), "the download is gone once kept")

	// The switch's parent records the outcome; the till reports it.
	st.Enter(release.Probation, "on probation", time.Now())
	require.NoError(t, st.Write(tl.dataDir))
	st.Install(time.Now())
	require.NoError(t, st.Write(tl.dataDir))
	ps = receiptdStatus(t, srv, uid, protobufs.PackageStatusEnum_PackageStatusEnum_Installed)
	require.Equal(t, "1.1.0", ps.AgentHasVersion)

	// The same offer again (a server resends it): nothing is done again.
	srv.Offer(func(a controltest.Agent) bool { return a.UID == uid }, offer(t, "1.1.0", body, body, pa.Packages[control.PackageName].File.Signature))
	time.Sleep(200 * time.Millisecond) // a switch asked for again would show by now
	require.Equal(t, int32(1), tl.switches.Load())
}

// TestOfferedReleasesRefused: each release a till must not run is
// reported INSTALL_FAILED naming why, with nothing kept, nothing
// switched to, and the version running unchanged.
func TestOfferedReleasesRefused(t *testing.T) {
	t.Parallel()
	signer, foreign := updatetest.NewSigner(t), updatetest.NewSigner(t)
	body := []byte("receiptd 1.1.0, the executable")
	good := signer.Sign(body, update.Comment("1.1.0", platform))
	for name, c := range map[string]struct {
		pa   func(t *testing.T) *protobufs.PackagesAvailable
		prep func(t *testing.T, dataDir string)
		want string
	}{
		"tampered file": {pa: func(t *testing.T) *protobufs.PackagesAvailable {
			return offer(t, "1.1.0", []byte("receiptd 1.1.0, changed"), []byte("receiptd 1.1.0, changed"), good)
		}, want: "refused (signature)"},
		"hash not the file's": {pa: func(t *testing.T) *protobufs.PackagesAvailable {
			return offer(t, "1.1.0", []byte("another file"), body, good)
		}, want: "refused (hash)"},
		"foreign key": {pa: func(t *testing.T) *protobufs.PackagesAvailable {
			return offer(t, "1.1.0", body, body, foreign.Sign(body, update.Comment("1.1.0", platform)))
		}, want: "refused (key)"},
		"wrong platform": {pa: func(t *testing.T) *protobufs.PackagesAvailable {
			return offer(t, "1.1.0", body, body, signer.Sign(body, update.Comment("1.1.0", "plan9/mips")))
		}, want: "refused (comment)"},
		"older version": {pa: func(t *testing.T) *protobufs.PackagesAvailable {
			return offer(t, "0.9.0", body, body, signer.Sign(body, update.Comment("0.9.0", platform)))
		}, want: "refused (version)"},
		"rolled back before": {pa: func(t *testing.T) *protobufs.PackagesAvailable {
			return offer(t, "1.1.0", body, body, good)
		}, prep: func(t *testing.T, dataDir string) {
			sum := sha256.Sum256(body)
			require.NoError(t, os.MkdirAll(dataDir, 0o750))
			require.NoError(t, release.State{Phase: release.RolledBack, RolledBack: []string{hex.EncodeToString(sum[:])}}.Write(dataDir))
		}, want: "refused (rolled back)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := controltest.Start(t)
			tl := startUpdatingTill(t, srv, signer)
			if c.prep != nil {
				c.prep(t, tl.dataDir)
			}
			uid := tl.client.InstanceUID()
			agent(t, srv, uid, func(a controltest.Agent) bool { return a.Packages != nil })
			srv.Offer(func(a controltest.Agent) bool { return a.UID == uid }, c.pa(t))
			ps := receiptdStatus(t, srv, uid, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed)
			require.Contains(t, ps.ErrorMessage, c.want)
			require.Equal(t, "1.0.0", ps.AgentHasVersion)
			require.Zero(t, tl.switches.Load())
			entries, _ := os.ReadDir(layout.Versions(tl.dataDir))
			require.Empty(t, entries, "nothing kept")
			parts, _ := filepath.Glob(filepath.Join(tl.dataDir, layout.DownloadsDir, "*"))
			require.Empty(t, parts, "a refused download is not kept")
		})
	}
}

// TestAnEarlierOutcomeIsNotTheNewOffers: update.json keeps the outcome of
// the last offer handled; once the server offers another, no status
// answering the new offer carries the old one's INSTALL_FAILED (a head
// office would halt the new release on it): the new offer is
// INSTALL_PENDING until it is handled. The new offer is the same file,
// signed again with the right key: it is checked again, and taken.
func TestAnEarlierOutcomeIsNotTheNewOffers(t *testing.T) {
	t.Parallel()
	srv := controltest.Start(t)
	signer, foreign := updatetest.NewSigner(t), updatetest.NewSigner(t)
	tl := startUpdatingTill(t, srv, signer)
	uid := tl.client.InstanceUID()
	agent(t, srv, uid, func(a controltest.Agent) bool { return a.Packages != nil })
	body := []byte("receiptd 1.1.0, the executable")
	srv.Offer(func(a controltest.Agent) bool { return a.UID == uid },
		offer(t, "1.1.0", body, body, foreign.Sign(body, update.Comment("1.1.0", platform))))
	receiptdStatus(t, srv, uid, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed)

	next := offer(t, "1.1.0", body, body, signer.Sign(body, update.Comment("1.1.0", platform)))
	next.AllPackagesHash = append([]byte("re-signed "), next.AllPackagesHash...)
	srv.Offer(func(a controltest.Agent) bool { return a.UID == uid }, next)
	defer func() {
		if t.Failed() {
			a, _ := srv.Agent(uid)
			for _, r := range a.PackageReports {
				t.Logf("report %x: %v", r.ServerProvidedAllPackagesHash, r.Packages[control.PackageName])
			}
		}
	}()
	receiptdStatus(t, srv, uid, protobufs.PackageStatusEnum_PackageStatusEnum_Installing)
	require.Eventually(t, func() bool { return tl.switches.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	a, _ := srv.Agent(uid)
	for _, r := range a.PackageReports {
		if bytes.Equal(r.ServerProvidedAllPackagesHash, next.AllPackagesHash) {
			ps := r.Packages[control.PackageName]
			require.NotEqual(t, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, ps.Status,
				"the refusal of 1.1.0 reported as 1.1.1's: %v", ps)
			require.Equal(t, "1.1.0", ps.ServerOfferedVersion)
		}
	}
}

// TestNoPackagesWhereTheDaemonDoesNotSwitch: a till whose daemon does not
// switch to releases (receiptd demo) does not say it accepts packages,
// trusted keys or not.
func TestNoPackagesWhereTheDaemonDoesNotSwitch(t *testing.T) {
	t.Parallel()
	srv := controltest.Start(t)
	signer := updatetest.NewSigner(t)
	tl := startTillOpts(t, srv.WSURL(), "", func(o *control.Options) {
		o.Updates = &control.Updates{
			Till:    release.Till{DataDir: o.Start.Config.DataDir, TrustedKeys: []string{signer.PublicKey()}, Binary: "1.0.0"},
			Switch:  func() error { return nil },
			Enabled: func() bool { return false },
		}
	})
	a := agent(t, srv, tl.client.InstanceUID(), func(a controltest.Agent) bool { return a.Description != nil && a.Health != nil })
	require.Zero(t, a.Capabilities&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages))
	require.Empty(t, a.Packages.GetPackages())
}
