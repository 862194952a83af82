//go:build linux

package daemon_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestDiskFullAndBack runs the daemon on a 3 MiB volume with the tax
// service down, as a till whose disk fills during an outage: receipts are
// accepted until neither the database nor the write-ahead log can grow,
// then refused with 507 and a clear message, which the status page and the
// metrics show. Once there is room again, receipts are accepted again, and
// after a restart every acknowledged receipt is there.
func TestDiskFullAndBack(t *testing.T) {
	small := t.TempDir()
	if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=3m"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("mount a small tmpfs (CI runs as root): %v", err)
		}
		t.Skipf("mount a small tmpfs: %v (needs root)", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(small, syscall.MNT_DETACH) })
	up := testkit.StartSim(t, sim.Options{})
	require.NoError(t, up.SetFaults(sim.Faults{Down: true}))
	cfg := testConfig(t, up.URL())
	cfg.DataDir = small + "/data"
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)

	acked := 0
	var refused []byte
	for i := 0; i < 20000 && refused == nil; i++ {
		resp, body := post(t, d.URL(), testkit.Receipt(fmt.Sprint("full", i)))
		switch resp.StatusCode {
		case http.StatusAccepted:
			acked++
		case http.StatusInsufficientStorage:
			refused = body
		default:
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	require.NotNil(t, refused, "the volume never filled")
	t.Logf("%d receipts accepted, then 507: %s", acked, refused)
	require.Contains(t, string(refused), "disk")
	_, page := getBody(t, d.URL()+"/")
	require.Contains(t, strings.ToLower(string(page)), "disk is full")
	_, metrics := getBody(t, d.URL()+"/metrics")
	require.Contains(t, string(metrics), "receiptd_store_disk_full 1")

	require.NoError(t, syscall.Mount("tmpfs", small, "tmpfs", syscall.MS_REMOUNT, "size=64m"))
	require.Eventually(t, func() bool {
		resp, _ := post(t, d.URL(), testkit.Receipt(fmt.Sprint("room", acked)))
		if resp.StatusCode == http.StatusAccepted {
			acked++
		}
		return resp.StatusCode == http.StatusAccepted
	}, 20*time.Second, 100*time.Millisecond, "accepted again once there is room")
	require.NoError(t, stop())

	d, err = daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop = run(t, d)
	defer func() { require.NoError(t, stop()) }()
	_, body := getBody(t, d.URL()+"/receiptd/status")
	var status struct{ Counts map[string]int }
	require.NoError(t, json.Unmarshal(body, &status))
	require.Equal(t, acked, status.Counts["queued"]+status.Counts["sending"], "every acknowledged receipt after a restart")
}
