package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestRestoreHoldsWhatWasUnsent checks that restored unsent entries come
// back held: a backup taken while 3 receipts are queued, the queue
// drained, the backup restored as the packaging README says: the tax
// service receives none of the 3 again until an operator's forced retry.
func TestRestoreHoldsWhatWasUnsent(t *testing.T) {
	testkit.Parallel(t)
	up := sim.New(sim.Options{Seed: 3})
	require.NoError(t, up.Start("127.0.0.1:0"))
	defer up.Close()
	require.NoError(t, up.SetFaults(sim.Faults{Down: true}))
	dir := filepath.Join(t.TempDir(), "data")
	d := startBinary(t, dir, up.URL())
	for i := 1; i <= 3; i++ {
		require.Equal(t, http.StatusAccepted, postSample(t, d.base, fmt.Sprintf("%06d", i)))
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	code, out, stderr := runCLI(t, "backup", "-addr", d.base, "-token", "unused", backup)
	require.Equal(t, exitOK, code, "%s%s", out, stderr)

	require.NoError(t, up.SetFaults(sim.Faults{}))
	require.Eventually(t, func() bool { return len(up.Receipts()) == 3 }, 20*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return testkit.GetEntry(t, d.base, "Q000000000003").State == "sent" }, 10*time.Second, 50*time.Millisecond)

	code, _, stderr = runCLI(t, "restore", "-config", d.cfg, backup)
	require.Equal(t, exitFailure, code, "a restore while receiptd runs is refused")
	require.Contains(t, stderr, "stop it first")
	d.stop()

	// The old way, the backup copied over the database, is refused: it is
	// an older copy and would send the 3 receipts again.
	db := layout.DB(dir)
	raw, err := os.ReadFile(backup)
	require.NoError(t, err)
	require.NoError(t, os.Rename(db, db+".current"))
	require.NoError(t, os.WriteFile(db, raw, 0o600))
	refusedCode, refused := runRefused(t, dataDirConfig(dir))
	require.Equal(t, exitFailure, refusedCode, refused)
	require.Contains(t, refused, "older copy")
	require.Contains(t, refused, "receiptd restore FILE")
	require.Len(t, up.Receipts(), 3)

	code, out, stderr = runCLI(t, "restore", "-config", d.cfg, backup)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "3 entries unsent in the backup are held")
	require.FileExists(t, layout.DB(dir))

	d = startBinary(t, dir, up.URL())
	// A new receipt is sent: the worker runs, and it would have sent the
	// older, restored ones first had they been queued.
	require.Equal(t, http.StatusOK, postSample(t, d.base, "000004"))
	require.Len(t, up.Receipts(), 4, "none of the restored receipts is sent again")
	for _, id := range []string{"Q000000000001", "Q000000000002", "Q000000000003"} {
		e := testkit.GetEntry(t, d.base, id)
		require.Equal(t, "held", e.State, id)
		require.Contains(t, e.Outcome.Message, "restored from a backup")
	}

	code, out, stderr = runCLI(t, "entries", "-addr", d.base, "-token", "unused", "-state", "held")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "answer lost: check with the tax service before retry -force")

	code, _, stderr = runCLI(t, "retry", "-addr", d.base, "-token", "unused", "Q000000000001")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "check with the tax service")
	require.Contains(t, stderr, "retry -force Q000000000001")
	require.Len(t, up.Receipts(), 4)

	code, out, stderr = runCLI(t, "retry", "-addr", d.base, "-token", "unused", "-force", "Q000000000001")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "Q000000000001: queued")
	require.Eventually(t, func() bool { return len(up.Receipts()) == 5 }, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "held", testkit.GetEntry(t, d.base, "Q000000000002").State)
}

// TestReplayOfRejectedReceiptAfterRestart: the tax service's refusal is
// kept with the entry, so a POS repeating the receipt after receiptd
// restarted (its memory gone) gets the same refusal, and nothing is sent
// again.
func TestReplayOfRejectedReceiptAfterRestart(t *testing.T) {
	testkit.Parallel(t)
	up := sim.New(sim.Options{Seed: 4})
	require.NoError(t, up.Start("127.0.0.1:0"))
	defer up.Close()
	require.NoError(t, up.SetFaults(sim.Faults{RejectNext: 1, RejectMessage: "districtCode: unknown"}))
	dir := filepath.Join(t.TempDir(), "data")
	d := startBinary(t, dir, up.URL())
	require.Equal(t, http.StatusBadRequest, postSample(t, d.base, "000001"))
	d.stop()

	d = startBinary(t, dir, up.URL())
	resp, err := http.Post(d.base+"/rest/receipt", "application/json", bytes.NewReader(sampleReceipt("000001")))
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%v", m)
	require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	require.Equal(t, "districtCode: unknown", m["message"])
	require.Equal(t, "ERROR", m["status"])
	require.Equal(t, 1, up.Requests(sim.RouteCreateReceipt), "nothing sent again")
}
