//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/control"
	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/layout"
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
	p := startUpdating(t, v100, cfg, 20*time.Second)
	cfg = p.Config()
	first := tillPackage(t, srv, p, "1.0.0 says it takes packages", func(a controltest.Agent, ps *protobufs.PackageStatus) bool {
		return a.Capabilities&uint64(protobufs.AgentCapabilities_AgentCapabilities_AcceptsPackages) != 0 &&
			ps.GetAgentHasVersion() == "1.0.0" && ps.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installed
	})

	stop := make(chan struct{})
	var unanswered []string
	acked, failures, posDone := pos(p.URL(), stop, &unanswered, 0)
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

// offeredTill starts 1.0.0 trusting s under srv, on probation for
// probation, with window as update.window, and returns it and the
// acknowledged receipts of a few sales made before anything is offered.
func offeredTill(t *testing.T, s updatetest.Signer, srv *controltest.Server, window string) (*harness.Process, []string) {
	t.Helper()
	v100, _, _ := buildReleases(t)
	cfg := updateTill(t, s, 2*time.Second)
	cfg.Control.OpAMPURL = srv.WSURL()
	cfg.Update.Window = window
	p := startKilled(t, v100, cfg, 20*time.Second)
	return p, sell(t, p.URL(), "K", 5)
}

// sell makes n sales and returns their queueIds.
func sell(t *testing.T, base, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		resp, err := http.Post(base+"/rest/receipt", "application/json", strings.NewReader(testkit.Receipt(fmt.Sprintf("%s%05d", prefix, i))))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, resp.StatusCode)
		ids = append(ids, resp.Header.Get("X-Queue-Id"))
	}
	return ids
}

// restart kills p (kill -9: the new version, its child, goes with it) and
// starts the entry point (1.0.0) again on the same file, stopped when the
// test ends.
func restart(t *testing.T, p *harness.Process) *harness.Process {
	t.Helper()
	require.NoError(t, p.Kill())
	v100, _, _ := buildReleases(t)
	again, err := harness.StartFile(context.Background(), v100, p.ConfigPath())
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, again.Stop(ctx), "log: %s", again.LogTail(4000))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, again.WaitReady(ctx), "log: %s", again.LogTail(4000))
	return again
}

// requireStored checks that every queueId in ids is stored once.
func requireStored(t *testing.T, base string, ids []string) {
	t.Helper()
	entries, err := testkit.ListEntries[testkit.Entry](context.Background(), http.DefaultClient, base)
	require.NoError(t, err)
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.QueueID]++
	}
	for _, id := range ids {
		require.Equal(t, 1, seen[id], "receipt %s acknowledged, stored once", id)
	}
}

// TestKillAtEachStepOfAnOfferedSwitch: kill -9 of a till at each step of
// a release offered over OpAMP leaves it on one whole version with every
// acknowledged receipt: while the file downloads (the next start
// fetches the rest, asking for it with a Range, and installs it), once it
// is verified and staged waiting for update.window (the next start keeps
// it staged), and while switching to it (the next start rolls it back and
// runs 1.0.0; the head office reads INSTALL_FAILED). A kill during the
// probation is TestKillDuringProbationRollsBack.
func TestKillAtEachStepOfAnOfferedSwitch(t *testing.T) {
	testkit.Parallel(t)
	_, v110, _ := buildReleases(t)
	s := updatetest.NewSigner(t)
	file := signed(t, s, v110, "1.1.0")

	t.Run("downloading", func(t *testing.T) {
		t.Parallel()
		srv := controltest.Start(t)
		p, ids := offeredTill(t, s, srv, "")
		body, err := os.ReadFile(file)
		require.NoError(t, err)
		sig, err := os.ReadFile(file + ".minisig")
		require.NoError(t, err)
		var mu sync.Mutex
		var ranges []string
		files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			ranges = append(ranges, r.Header.Get("Range"))
			first := len(ranges) == 1
			mu.Unlock()
			if !first {
				http.ServeContent(w, r, "receiptd", time.Time{}, bytes.NewReader(body))
				return
			}
			// The first download crawls: the till is killed during it.
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			for off := 0; off < len(body); off += 64 << 10 {
				if _, err := w.Write(body[off:min(off+64<<10, len(body))]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
		}))
		t.Cleanup(files.Close)
		sum := sha256.Sum256(body)
		srv.Offer(func(controltest.Agent) bool { return true }, &protobufs.PackagesAvailable{AllPackagesHash: sum[:],
			Packages: map[string]*protobufs.PackageAvailable{control.PackageName: {
				Type: protobufs.PackageType_PackageType_TopLevel, Version: "1.1.0", Hash: sum[:],
				File: &protobufs.DownloadableFile{DownloadUrl: files.URL + "/receiptd", ContentHash: sum[:], Signature: sig},
			}}})
		part := layout.Download(p.Config().DataDir, hex.EncodeToString(sum[:]))
		require.Eventually(t, func() bool {
			info, err := os.Stat(part)
			return err == nil && info.Size() > 256<<10
		}, 30*time.Second, 10*time.Millisecond, "log: %s", p.LogTail(4000))
		again := restart(t, p)
		tillPackage(t, srv, again, "1.1.0 installed after the restart", func(_ controltest.Agent, ps *protobufs.PackageStatus) bool {
			return ps.GetAgentHasVersion() == "1.1.0" && ps.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installed
		})
		mu.Lock()
		require.GreaterOrEqual(t, len(ranges), 2)
		require.Regexp(t, `^bytes=[1-9]\d*-$`, ranges[1], "the rest asked for, not the whole file again")
		mu.Unlock()
		requireStored(t, again.URL(), ids)
	})

	t.Run("staged", func(t *testing.T) {
		t.Parallel()
		srv := controltest.Start(t)
		// A window two hours from now, in the till's time zone: the
		// release waits staged, whatever the day and hour.
		loc, err := time.LoadLocation("Asia/Ulaanbaatar")
		require.NoError(t, err)
		now := time.Now().In(loc)
		window := fmt.Sprintf("%02d:00-%02d:00", now.Add(2*time.Hour).Hour(), now.Add(3*time.Hour).Hour())
		p, ids := offeredTill(t, s, srv, window)
		offerRelease(t, srv, file, "1.1.0")
		require.Eventually(t, func() bool { return readState(t, p.Config().DataDir).Phase == release.Staged },
			30*time.Second, 10*time.Millisecond, "log: %s", p.LogTail(4000))
		again := restart(t, p)
		v, _ := served(t, again.URL())
		require.Equal(t, "1.0.0", v)
		st := readState(t, again.Config().DataDir)
		require.Equal(t, release.Staged, st.Phase, "still waiting for its window")
		require.FileExists(t, st.Offered.Path)
		tillPackage(t, srv, again, "1.1.0 staged after the restart", func(_ controltest.Agent, ps *protobufs.PackageStatus) bool {
			return ps.GetServerOfferedVersion() == "1.1.0" && ps.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_Installing
		})
		requireStored(t, again.URL(), ids)
	})

	t.Run("switching", func(t *testing.T) {
		t.Parallel()
		srv := controltest.Start(t)
		p, ids := offeredTill(t, s, srv, "")
		dataDir := p.Config().DataDir
		offerRelease(t, srv, file, "1.1.0")
		require.Eventually(t, func() bool {
			st, err := release.ReadState(dataDir)
			return err == nil && st.Phase == release.Switching
		}, 30*time.Second, time.Millisecond, "log: %s", p.LogTail(4000))
		again := restart(t, p)
		v, _ := served(t, again.URL())
		require.Equal(t, "1.0.0", v, "one whole version: the one before")
		st := readState(t, dataDir)
		require.Equal(t, release.RolledBack, st.Phase)
		require.Contains(t, st.Message, "receiptd stopped while 1.1.0 was switching")
		failed := tillPackage(t, srv, again, "INSTALL_FAILED after the restart", func(_ controltest.Agent, ps *protobufs.PackageStatus) bool {
			return ps.GetStatus() == protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed
		})
		require.Equal(t, "1.0.0", failed.Packages.Packages[control.PackageName].AgentHasVersion)
		requireStored(t, again.URL(), ids)
		requireStored(t, again.URL(), sell(t, again.URL(), "L", 3))
	})
}
