//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
	"github.com/receiptd/receiptd/internal/update/updatetest"
)

// offerRelease offers the signed release file at path (path.minisig
// beside it) as version to every till srv has seen, served for download
// from a loopback URL as a head office's file server would.
func offerRelease(t *testing.T, srv *controltest.Server, path, version string) {
	t.Helper()
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	sig, err := os.ReadFile(path + ".minisig")
	require.NoError(t, err)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "receiptd", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(files.Close)
	sum := sha256.Sum256(body)
	srv.Offer(func(controltest.Agent) bool { return true }, &protobufs.PackagesAvailable{AllPackagesHash: sum[:],
		Packages: map[string]*protobufs.PackageAvailable{control.PackageName: {
			Type: protobufs.PackageType_PackageType_TopLevel, Version: version, Hash: sum[:],
			File: &protobufs.DownloadableFile{DownloadUrl: files.URL + "/receiptd", ContentHash: sum[:], Signature: sig},
		}}})
}

// tillPackage waits until the one till srv knows reports its receiptd
// package as cond wants, and returns the till as the server saw it.
func tillPackage(t *testing.T, srv *controltest.Server, p *harness.Process, what string, cond func(a controltest.Agent, ps *protobufs.PackageStatus) bool) controltest.Agent {
	t.Helper()
	var a controltest.Agent
	require.Eventually(t, func() bool {
		agents := srv.Agents()
		if len(agents) != 1 {
			return false
		}
		a = agents[0]
		return cond(a, a.Packages.GetPackages()[control.PackageName])
	}, 60*time.Second, 50*time.Millisecond, "%s; the server saw: %v\nlog: %s", what, func() any { return a.Packages }, func() any { return p.LogTail(4000) })
	return a
}

// TestOfferedOverOpAMPInstallsThenRollsBack: a till running 1.0.0 under
// a real OpAMP server (opamp-go's) takes 1.1.0 offered as a package
// while a POS posts receipts: INSTALLING on probation, then INSTALLED
// by 1.1.0 connected with the same instance UID, every receipt
// acknowledged stored once. Then a signed release that exits at start,
// offered the same way, is rolled back by 1.1.0's code: INSTALL_FAILED
// "rolled back: ...", 1.1.0 serving on.
func TestOfferedOverOpAMPInstallsThenRollsBack(t *testing.T) {
	testkit.Parallel(t)
	v100, v110, bad := buildReleases(t)
	s := updatetest.NewSigner(t)
	srv := controltest.Start(t)
	cfg := updateTill(t, s, 3*time.Second)
	cfg.Control.OpAMPURL = srv.WSURL()
	p, err := harness.Start(context.Background(), v100, t.TempDir(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, p.Stop(ctx), "log: %s", p.LogTail(4000))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, p.WaitReady(ctx))
	cfg = p.Config()
	first := tillPackage(t, srv, p, "1.0.0 says it takes packages", func(a controltest.Agent, ps *protobufs.PackageStatus) bool {
		return a.Capabilities&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages) != 0 &&
			ps.GetAgentHasVersion() == "1.0.0" && ps.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installed
	})

	stop := make(chan struct{})
	var unanswered []string
	acked, failures, posDone := pos(p.URL(), stop, &unanswered)
	offerRelease(t, srv, signed(t, s, v110, "1.1.0"), "1.1.0")
	tillPackage(t, srv, p, "1.1.0 on probation", func(_ controltest.Agent, ps *protobufs.PackageStatus) bool {
		return ps.GetServerOfferedVersion() == "1.1.0" && ps.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installing
	})
	installed := tillPackage(t, srv, p, "1.1.0 installed", func(a controltest.Agent, ps *protobufs.PackageStatus) bool {
		return ps.GetAgentHasVersion() == "1.1.0" && ps.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installed &&
			a.Attr("service.version") == "1.1.0"
	})
	require.Equal(t, first.UID, installed.UID, "the same till")
	close(stop)
	<-posDone
	require.Empty(t, *failures, "no POS request failed during the switch")
	t.Logf("POS requests retried after a connection closed unanswered: %d %v", len(unanswered), unanswered)
	entries, err := testkit.ListEntries[testkit.Entry](context.Background(), http.DefaultClient, p.URL())
	require.NoError(t, err)
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.QueueID]++
	}
	for _, id := range *acked {
		require.Equal(t, 1, seen[id], "receipt %s acknowledged, stored once", id)
	}
	require.Len(t, entries, len(*acked))

	offerRelease(t, srv, signed(t, s, bad, "1.2.0"), "1.2.0")
	failed := tillPackage(t, srv, p, "1.2.0 rolled back", func(_ controltest.Agent, ps *protobufs.PackageStatus) bool {
		return ps.GetServerOfferedVersion() == "1.2.0" && ps.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
	})
	ps := failed.Packages.Packages[control.PackageName]
	require.Contains(t, ps.ErrorMessage, "rolled back: it stopped at start")
	require.Equal(t, "1.1.0", ps.AgentHasVersion)
	v, _ := served(t, p.URL())
	require.Equal(t, "1.1.0", v, "the version installed before serves on")
	st := readState(t, cfg.DataDir)
	require.Equal(t, release.RolledBack, st.Phase)
	require.Len(t, st.RolledBack, 1)
}
