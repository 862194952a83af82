package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/datadir"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestKilledBackupLeavesNoPartialCopy kills a real `receiptd backup` in the
// middle of its download: the partial copy it leaves is gone after the next
// backup, whether that one succeeds or fails.
func TestKilledBackupLeavesNoPartialCopy(t *testing.T) {
	testkit.Parallel(t)
	dbPath := filepath.Join(t.TempDir(), "src.db")
	st, err := store.Open(dbPath, store.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	db, err := os.ReadFile(dbPath)
	require.NoError(t, err)

	// stalls sends the copy's first 64 KiB, which the sockets' buffers hold
	// whether or not the backup reads them, and then nothing more until the
	// backup is killed.
	stalls := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "99999999")
		_, _ = w.Write(db[:64<<10])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer stalls.Close()
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(db) }))
	defer good.Close()

	for _, next := range []struct {
		name string
		addr string
		code int
	}{{"next backup succeeds", good.URL, exitOK}, {"next backup fails", "http://" + testkit.ClosedAddr(t), exitFailure}} {
		t.Run(next.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "backup.db")
			receiptdBinary(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := binCmd(ctx, t, "backup", "-addr", stalls.URL, "-token", "t", out)
			require.NoError(t, cmd.Start())
			require.Eventually(t, func() bool {
				fi, err := os.Stat(datadir.PartialName(out))
				return err == nil && fi.Size() > 0
			}, 20*time.Second, 20*time.Millisecond, "the backup is downloading")
			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()
			require.FileExists(t, datadir.PartialName(out), "the kill left a partial copy")
			require.NoFileExists(t, out)

			code, _, stderr := runCLI(t, "backup", "-addr", next.addr, "-token", "t", out)
			require.Equal(t, next.code, code, stderr)
			require.NoFileExists(t, datadir.PartialName(out))
		})
	}
}

// TestBackupOfAnOlderSchemaIsKeptAsSent: `receiptd backup` checks the copy
// read-only (backup.WriteChecked), so a copy a daemon of an older release
// sends is written byte for byte; opening it read-write for the check
// migrated the copy to this release's schema before it was renamed.
func TestBackupOfAnOlderSchemaIsKeptAsSent(t *testing.T) {
	t.Parallel()
	for _, fx := range upgradeFixtures[:2] { // schema 1 and 2
		t.Run(fx.release, func(t *testing.T) {
			db, err := os.ReadFile(layout.DB(fixtureDir(t, fx.release)))
			require.NoError(t, err)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(db) }))
			defer srv.Close()
			out := filepath.Join(t.TempDir(), "backup.db")
			code, stdout, stderr := runCLI(t, "backup", "-addr", srv.URL, "-token", "t", out)
			require.Equal(t, exitOK, code, stderr)
			require.Contains(t, stdout, "backup written and checked")
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			require.True(t, bytes.Equal(db, got), "the copy is what the daemon sent")
			version, _ := fileSchema(t, out)
			require.Equal(t, fx.schema, version)
		})
	}
}

// TestRetryOfPaymentNamesTheEarlierID: the retry of a payment entry prints
// that its first upstream id stays in the entry's attempts.
func TestRetryOfPaymentNamesTheEarlierID(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"queueId":"Q000000000007","kind":"receipt","state":"queued","attempts":[` +
			`{"result":"payment","httpStatus":200},` +
			`{"result":"operator_retry","error":"put back in the queue by an operator from payment","upstreamId":"000000000000000000000000000000777"}]}`))
	}))
	defer srv.Close()
	code, stdout, stderr := runCLI(t, "retry", "-addr", srv.URL, "-token", "t", "Q000000000007")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Q000000000007: queued\n")
	require.Contains(t, stdout, "the earlier upstream id 000000000000000000000000000000777 stays in the entry's attempts")
}
