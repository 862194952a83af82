package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// postKeyed posts sample receipt bill with an Idempotency-Key and returns
// the status, the queueId and whether the answer was a replay.
func postKeyed(t *testing.T, base, bill, key string) (int, string, bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/rest/receipt", bytes.NewReader(sampleReceipt(bill)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Prefer", "wait=5")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Queue-Id"), resp.Header.Get("Idempotent-Replayed") == "true"
}

// zeroEntriesRoot zeroes the root page of the queue's entries bucket: a
// bad sector where the tree of every entry begins.
func zeroEntriesRoot(t *testing.T, db string) {
	t.Helper()
	root, ps := entriesRoot(t, db)
	writeAt(t, db, root*int64(ps), make([]byte, ps))
}

// TestSalvageThenRun is the operator's path with the real binary: 20
// receipts sent, 10 queued while the tax service is down, receiptd
// stopped, a bad sector on the entries' root page. `salvage` refuses
// while receiptd runs; `run` refuses the file (exit 1) naming salvage;
// `salvage` prints what it recovered and held; `run` starts again on the
// new database and sends a new receipt under the next queueId and none of
// the held ones. What salvage does to the directory and the entries (the
// damaged file kept, states, messages, keys) is internal/datadir's
// TestSalvageKeepsWhatIsFinished.
func TestSalvageThenRun(t *testing.T) {
	up := sim.New(sim.Options{Seed: 5})
	require.NoError(t, up.Start("127.0.0.1:0"))
	defer up.Close()
	dir := filepath.Join(t.TempDir(), "data")
	d := startBinary(t, dir, up.URL())
	for i := 1; i <= 30; i++ {
		if i == 21 {
			require.NoError(t, up.SetFaults(sim.Faults{Down: true}))
		}
		code, id, _ := postKeyed(t, d.base, fmt.Sprintf("%06d", i), fmt.Sprintf("till1-%d", i))
		require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, code)
		require.Equal(t, queue.FormatID(uint64(i)), id)
	}
	require.Len(t, up.Receipts(), 20)
	code, _, stderr := runCLI(t, "salvage", "-config", d.cfg)
	require.Equal(t, exitFailure, code, "salvage refuses while receiptd runs")
	require.Contains(t, stderr, "stop it first")
	d.stop()

	db := layout.DB(dir)
	zeroEntriesRoot(t, db)
	code, refused := runRefused(t, dataDirConfig(dir))
	require.Equal(t, exitFailure, code, refused)
	require.Contains(t, refused, db)
	require.Contains(t, refused, "receiptd salvage", "the refusal names the way back")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := binCmd(ctx, t, "salvage", "-config", d.cfg)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("receiptd salvage:\n%s", out)
	require.Contains(t, string(out), "recovered 30 entries")
	require.Contains(t, string(out), "10 unfinished entries are held")

	require.NoError(t, up.SetFaults(sim.Faults{}))
	d = startBinary(t, dir, up.URL())
	defer d.stop()
	require.Equal(t, "held", testkit.GetEntry(t, d.base, queue.FormatID(21)).State, "the daemon serves the new database")
	code, id, replayed := postKeyed(t, d.base, "000031", "till1-31")
	require.Equal(t, http.StatusOK, code)
	require.False(t, replayed)
	require.Equal(t, queue.FormatID(31), id, "queueIds continue after the recovered ones")
	require.Len(t, up.Receipts(), 21, "none of the held receipts was sent")
}
