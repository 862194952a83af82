package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
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
	var root, ps int
	b, err := bbolt.Open(db, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	require.NoError(t, b.View(func(tx *bbolt.Tx) error {
		root = int(tx.Bucket(store.BucketQueue).Bucket([]byte("entries")).Root())
		return nil
	}))
	ps = b.Info().PageSize
	require.NoError(t, b.Close())
	require.NotZero(t, root, "the entries bucket has a page of its own")
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, ps), int64(root*ps))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestSalvageThenRun is the operator's path with the real binary: 20
// receipts sent, 10 queued while the tax service is down, receiptd
// stopped, a bad sector on the entries' root page. `run` refuses the
// file; `salvage` rebuilds the database and keeps the damaged one; `run`
// starts again with the 10 unsent receipts held (never sent without a
// check), the 20 sent ones kept, and a POS retry of a recovered receipt
// under its Idempotency-Key answered as a replay.
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
	kept, err := filepath.Glob(layout.KeptGlob(db, layout.Damaged))
	require.NoError(t, err)
	require.Len(t, kept, 1, "the damaged file is kept")

	require.NoError(t, up.SetFaults(sim.Faults{}))
	d = startBinary(t, dir, up.URL())
	defer d.stop()
	for i := 1; i <= 30; i++ {
		e := testkit.GetEntry(t, d.base, queue.FormatID(uint64(i)))
		if i <= 20 {
			require.Equal(t, "sent", e.State, i)
			continue
		}
		require.Equal(t, "held", e.State, i)
		require.Contains(t, e.Outcome.Message, "receiptd salvage")
		require.Contains(t, e.Outcome.Message, "Check with the tax service")
	}
	for _, i := range []int{7, 25} {
		code, id, replayed := postKeyed(t, d.base, fmt.Sprintf("%06d", i), fmt.Sprintf("till1-%d", i))
		require.True(t, replayed, "a POS retry of receipt %d is a replay", i)
		require.Equal(t, queue.FormatID(uint64(i)), id)
		require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, code)
	}
	code, id, replayed := postKeyed(t, d.base, "000031", "till1-31")
	require.Equal(t, http.StatusOK, code)
	require.False(t, replayed)
	require.Equal(t, queue.FormatID(31), id, "queueIds continue after the recovered ones")
	require.Len(t, up.Receipts(), 21, "none of the held receipts was sent")
}
