package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// backupSection is a [backup] section writing snapshots to dir every
// second, keeping keep.
func backupSection(dir string, keep int) string {
	return fmt.Sprintf("[backup]\ndir = %s\nevery = \"1s\"\nkeep = %d\n", tomlString(dir), keep)
}

func backupStatus(t *testing.T, base string) backup.Status {
	t.Helper()
	resp, err := http.Get(base + "/receiptd/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st struct {
		Backup *backup.Status `json:"backup"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.NotNil(t, st.Backup, "/receiptd/status has backup")
	return *st.Backup
}

// metric reads one unlabelled series from /metrics; ok false when absent.
func metric(t *testing.T, base, name string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v, true
}

func snapshotsIn(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "receiptd-*Z.db"))
	require.NoError(t, err)
	return names
}

// TestSnapshotsAreCheckedPrunedAndTakeOverADeadTill checks the promises
// of [backup] with the real binary: with every = 1s snapshots appear on
// a directory that did not exist, each opens and passes bbolt's check with
// every receipt in it, and they are pruned to keep. Then the till dies
// (kill -9) and a new one takes over its sales: the newest snapshot is
// restored into an empty data directory and run. The receipts that were
// unsent come back held with the check-first message, none is sent, and
// their idempotency keys are kept: the POS repeating one gets a replay.
func TestSnapshotsAreCheckedPrunedAndTakeOverADeadTill(t *testing.T) {
	up := sim.New(sim.Options{Seed: 25})
	require.NoError(t, up.Start("127.0.0.1:0"))
	defer up.Close()
	require.NoError(t, up.SetFaults(sim.Faults{Down: true}))
	// The snapshots' volume is one of their own: the daemon's guard keeps
	// 10% of the disk free, and this test must not fail on a full host.
	snaps := filepath.Join(storetest.VolumeOfItsOwn(t, 1<<30), "usb", "receiptd")
	d := startBinary(t, filepath.Join(t.TempDir(), "data"), up.URL(), backupSection(snaps, 2))
	for i := 1; i <= 5; i++ {
		require.Equal(t, http.StatusAccepted, postSample(t, d.base, fmt.Sprintf("%06d", i)))
	}
	// Snapshots taken before the last receipt may hold fewer; wait for 3
	// good ones after it.
	first := backupStatus(t, d.base).Snapshots
	require.Eventually(t, func() bool { return backupStatus(t, d.base).Snapshots >= first+3 }, 30*time.Second,
		100*time.Millisecond, "log: %s", d.logs)
	st := backupStatus(t, d.base)
	require.Equal(t, snaps, st.Dir)
	require.NotNil(t, st.LastSuccess)
	require.Empty(t, st.LastError)
	require.Equal(t, 5, st.LastEntries)
	last, ok := metric(t, d.base, "receiptd_backup_last_success_timestamp_seconds")
	require.True(t, ok)
	require.InDelta(t, float64(st.LastSuccess.Unix()), last, 5)
	failed, _ := metric(t, d.base, "receiptd_backup_last_failed")
	require.Zero(t, failed)

	require.Eventually(t, func() bool { return len(snapshotsIn(t, snaps)) == 2 }, 10*time.Second, 50*time.Millisecond,
		"pruned to keep = 2: %v", snapshotsIn(t, snaps))
	d.kill() // the till dies
	names := snapshotsIn(t, snaps)
	require.LessOrEqual(t, len(names), 2)
	for _, name := range names {
		ro, err := store.OpenReadOnly(name)
		require.NoError(t, err, name)
		require.NoError(t, ro.Check(), name)
		require.NoError(t, queue.CheckCopy(ro, 5), name)
		require.NoError(t, ro.Close())
	}
	newest := names[len(names)-1]
	before, err := os.ReadFile(newest)
	require.NoError(t, err)

	// A new till: an empty data directory, the tax service back.
	require.NoError(t, up.SetFaults(sim.Faults{}))
	dir := filepath.Join(t.TempDir(), "new-till", "data")
	cfg := writeFile(t, "restore.toml", dataDirConfig(dir))
	code, out, stderr := runCLI(t, "restore", "-config", cfg, newest)
	require.Equal(t, exitOK, code, "%s%s", out, stderr)
	require.Contains(t, out, "5 entries unsent in the backup are held")
	after, err := os.ReadFile(newest)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after), "restore leaves the snapshot as it was")

	d = startBinary(t, dir, up.URL(), backupSection(snaps, 2))
	require.Equal(t, http.StatusOK, postSample(t, d.base, "000006"), "a new receipt is sent")
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("Q%012d", i)
		e := testkit.GetEntry(t, d.base, id)
		require.Equal(t, "held", e.State, id)
		require.Contains(t, e.Outcome.Message, "restored from a backup")
		require.Contains(t, e.Outcome.Message, "Check with the tax service")
	}
	resp, err := http.Post(d.base+"/rest/receipt", "application/json", bytes.NewReader(sampleReceipt("000003")))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"), "the idempotency key came back with the snapshot")
	require.Equal(t, "Q000000000003", resp.Header.Get("X-Queue-Id"))
	require.Len(t, up.Receipts(), 1, "only the new receipt reaches the tax service")
	require.Contains(t, string(up.Receipts()[0].Body), `"billIdSuffix":"000006"`)
	d.stop()
}

// TestASnapshotThatCannotBeWrittenIsReported: backup.dir names a file, so
// no snapshot can be written. The failure shows in /receiptd/status, the
// metrics and the status page, nothing is left behind, and receipts are
// still accepted.
func TestASnapshotThatCannotBeWrittenIsReported(t *testing.T) {
	up := sim.New(sim.Options{Seed: 26})
	require.NoError(t, up.Start("127.0.0.1:0"))
	defer up.Close()
	require.NoError(t, up.SetFaults(sim.Faults{Down: true}))
	notDir := filepath.Join(t.TempDir(), "usb")
	require.NoError(t, os.WriteFile(notDir, []byte("a file where the snapshots' directory should be"), 0o600))
	d := startBinary(t, filepath.Join(t.TempDir(), "data"), up.URL(), backupSection(notDir, 2))
	require.Equal(t, http.StatusAccepted, postSample(t, d.base, "000001"))

	require.Eventually(t, func() bool { return backupStatus(t, d.base).Failures >= 2 }, 30*time.Second,
		100*time.Millisecond, "log: %s", d.logs)
	st := backupStatus(t, d.base)
	require.Nil(t, st.LastSuccess)
	require.Contains(t, st.LastError, notDir)
	failed, ok := metric(t, d.base, "receiptd_backup_last_failed")
	require.True(t, ok)
	require.Equal(t, 1.0, failed)
	failures, _ := metric(t, d.base, "receiptd_backup_failures_total")
	require.GreaterOrEqual(t, failures, 2.0)
	last, _ := metric(t, d.base, "receiptd_backup_last_success_timestamp_seconds")
	require.Zero(t, last)

	resp, err := http.Get(d.base + "/")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	i := strings.Index(string(page), "Needs attention")
	require.GreaterOrEqual(t, i, 0)
	require.Contains(t, string(page)[i:], "The last snapshot failed")

	require.Equal(t, http.StatusAccepted, postSample(t, d.base, "000002"), "receipts are still accepted")
	raw, err := os.ReadFile(notDir)
	require.NoError(t, err)
	require.Equal(t, "a file where the snapshots' directory should be", string(raw))
	require.Contains(t, d.logs.String(), "snapshot failed")
	d.stop()
}
