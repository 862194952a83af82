package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// dataDirWith makes a data directory the way receiptd does (database and
// marker) holding n queued receipts.
func dataDirWith(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	st, err := store.OpenDir(dir, store.Options{})
	require.NoError(t, err)
	defer st.Close()
	q, err := queue.Open(context.Background(), st, queue.Options{LogDir: layout.WAL(dir)})
	require.NoError(t, err)
	defer func() { require.NoError(t, q.Close(context.Background())) }()
	for i := range n {
		body := sampleReceipt(fmt.Sprintf("%06d", i))
		_, _, err := q.Enqueue(context.Background(), queue.NewReceipt{IdemKey: fmt.Sprintf("k%d", i), Body: body,
			BodyHash: receipt.Fingerprint(body)})
		require.NoError(t, err)
	}
	return dir
}

func dataDirConfig(dir string) string {
	return "listen = \"127.0.0.1:0\"\ndata_dir = " + tomlString(dir) + "\n"
}

// TestRunRefusesLostDatabase: once a data directory has held a database, a
// missing, empty, truncated or replaced file is exit 1 naming the file,
// with no Go crash dump and no new empty database in its place.
func TestRunRefusesLostDatabase(t *testing.T) {
	testkit.Parallel(t)
	for _, tc := range []struct {
		name   string
		breaks func(t *testing.T, db string)
		say    string
	}{
		{"missing", func(t *testing.T, db string) { require.NoError(t, os.Rename(db, db+".away")) }, "missing"},
		{"empty", func(t *testing.T, db string) { require.NoError(t, os.Truncate(db, 0)) }, "empty (0 bytes)"},
		{"truncated", func(t *testing.T, db string) {
			var used int64
			st, err := store.Open(db, store.Options{})
			require.NoError(t, err)
			require.NoError(t, st.View(func(tx *bbolt.Tx) error { used = tx.Size(); return nil }))
			require.NoError(t, st.Close())
			require.NoError(t, os.Truncate(db, used/2))
		}, "truncated"},
		{"replaced", func(t *testing.T, db string) {
			other, err := os.ReadFile(layout.DB(dataDirWith(t, 1)))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(db, other, 0o600))
		}, "not the one this data directory held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataDirWith(t, 300)
			db := layout.DB(dir)
			tc.breaks(t, db)
			before, _ := os.Stat(db)
			code, stderr := runRefused(t, dataDirConfig(dir))
			require.Equal(t, exitFailure, code, stderr)
			require.Contains(t, stderr, db)
			require.Contains(t, stderr, tc.say)
			require.Contains(t, stderr, "receiptd restore FILE")
			for _, dump := range []string{"goroutine ", "SIGBUS", "panic", "runtime."} {
				require.NotContains(t, stderr, dump, "no Go crash dump")
			}
			after, _ := os.Stat(db)
			if before == nil {
				require.Nil(t, after, "no new database in place of the missing one")
			} else {
				require.Equal(t, before.Size(), after.Size())
			}
		})
	}
}

// TestRunInitStartsOver: `run -init` is the explicit way to start with an
// empty queue where the database was lost: the flag reaches datadir.Init
// and the daemon starts on the new database (what Init does to the
// directory is internal/datadir's TestInit).
func TestRunInitStartsOver(t *testing.T) {
	testkit.Parallel(t)
	dir := dataDirWith(t, 1)
	db := layout.DB(dir)
	require.NoError(t, os.Remove(db))
	cfg := writeFile(t, "config.toml", dataDirConfig(dir)+"[log]\nformat = \"json\"\n")
	receiptdBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := binCmd(ctx, t, "run", "-init", "-config", cfg)
	stderr, err := run.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, run.Start())
	waitForLine(t, stderr, "receiptd ready")
	require.NoError(t, harness.AskToStop(run.Process))
	_, _ = io.Copy(io.Discard, stderr)
	require.NoError(t, run.Wait())
	require.FileExists(t, db)
}

// TestRunStopsAcknowledgingWhenDatabaseMoved: a database file moved away,
// deleted or replaced while receiptd runs stops every acknowledgement within
// seconds: POST /rest/receipt is 503, /readyz fails, and the log says how
// to recover.
func TestRunStopsAcknowledgingWhenDatabaseMoved(t *testing.T) {
	testkit.Parallel(t)
	if runtime.GOOS == "windows" {
		t.Skip("Windows does not let an open database file be renamed")
	}
	for _, tc := range []struct {
		name string
		do   func(db string) error
	}{
		{"moved", func(db string) error { return os.Rename(db, db+".moved") }},
		{"deleted", os.Remove},
		{"replaced", func(db string) error {
			b, err := os.ReadFile(db)
			if err != nil {
				return err
			}
			if err := os.WriteFile(db+".new", b, 0o600); err != nil {
				return err
			}
			return os.Rename(db+".new", db)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			d := startBinary(t, dir, "http://"+testkit.ClosedAddr(t))
			base, logs := d.base, d.logs
			require.Equal(t, http.StatusAccepted, postSample(t, base, "000001"))

			require.NoError(t, tc.do(layout.DB(dir)))
			deadline := time.Now().Add(5 * time.Second)
			code := 0
			for i := 2; time.Now().Before(deadline); i++ {
				if code = postSample(t, base, fmt.Sprintf("%06d", i)); code == http.StatusServiceUnavailable {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			require.Equal(t, http.StatusServiceUnavailable, code, "acknowledgements must stop within seconds")
			require.Equal(t, http.StatusServiceUnavailable, getStatus(base+"/readyz"))
			require.Equal(t, http.StatusServiceUnavailable, postSample(t, base, "000001"), "not even a replay")
			require.Contains(t, logs.String(), "moved, deleted or replaced")
			require.Contains(t, logs.String(), "receiptd backup FILE")

			// The rescue the log advises: the open file still holds the receipt.
			rescue := filepath.Join(t.TempDir(), "rescue.db")
			code, out, stderr := runCLI(t, "backup", "-addr", base, "-token", "unused", rescue)
			require.Equal(t, exitOK, code, "%s%s", out, stderr)
			st, err := store.Open(rescue, store.Options{})
			require.NoError(t, err)
			defer st.Close()
			q, err := queue.Open(context.Background(), st, queue.Options{})
			require.NoError(t, err)
			e, err := q.Get("Q000000000001")
			require.NoError(t, err, "the acknowledged receipt is in the rescued copy")
			require.Equal(t, queue.StateQueued, e.State)
		})
	}
}

func postSample(t *testing.T, base, bill string) int {
	t.Helper()
	resp, err := http.Post(base+"/rest/receipt", "application/json", bytes.NewReader(sampleReceipt(bill)))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func getStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestChangedBodyIsHeldNotSent changes a stored receipt's body in place in
// the bbolt file between runs (bbolt checksums no data page): the daemon
// must hold it with a message and send only the untouched one.
func TestChangedBodyIsHeldNotSent(t *testing.T) {
	testkit.Parallel(t)
	dir := dataDirWith(t, 2)
	db := layout.DB(dir)
	raw, err := os.ReadFile(db)
	require.NoError(t, err)
	// The first receipt's body is stored before the second's.
	from, to := []byte(`"totalAmount":12500.50,"totalVAT"`), []byte(`"totalAmount":92500.50,"totalVAT"`)
	i := bytes.Index(raw, from)
	require.GreaterOrEqual(t, i, 0)
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(to, int64(i))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	up := sim.New(sim.Options{Seed: 1})
	require.NoError(t, up.Start("127.0.0.1:0"))
	defer up.Close()
	base := startBinary(t, dir, up.URL()).base
	var held, sent testkit.Entry
	require.Eventually(t, func() bool {
		held, sent = testkit.GetEntry(t, base, "Q000000000001"), testkit.GetEntry(t, base, "Q000000000002")
		return held.State == "held" && sent.State == "sent"
	}, 20*time.Second, 50*time.Millisecond, "states: %s, %s", held.State, sent.State)
	require.Contains(t, held.Outcome.Message, "no longer matches")
	require.Len(t, up.Receipts(), 1, "only the untouched receipt reaches the tax service")
	require.Contains(t, string(up.Receipts()[0].Body), `"billIdSuffix":"000001"`)
}

// runningBinary is a `receiptd run` started by startBinary.
type runningBinary struct {
	base string              // http://127.0.0.1:PORT
	cfg  string              // its config file
	logs *testkit.SyncBuffer // its standard error (JSON log lines)
	stop func()              // SIGTERM, and wait for a clean exit
	kill func()              // SIGKILL (TerminateProcess on Windows), and wait
}

// startBinary runs the real binary on data directory dir with upstream as
// the tax service, waits until it is ready, and kills it at cleanup.
// extra is appended to its config file (whole sections).
func startBinary(t *testing.T, dir, upstream string, extra ...string) runningBinary {
	t.Helper()
	addr := testkit.ClosedAddr(t)
	cfg := writeFile(t, "config.toml", "listen = \""+addr+"\"\ndata_dir = "+tomlString(dir)+
		"\n[upstream]\nbase_url = \""+upstream+"\"\nlookup_base_url = \""+upstream+"\"\n"+
		"[sync]\nmin_backoff = \"100ms\"\nmax_backoff = \"300ms\"\n[log]\nformat = \"json\"\n"+strings.Join(extra, ""))
	receiptdBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	run := binCmd(ctx, t, "run", "-config", cfg)
	d := runningBinary{base: "http://" + addr, cfg: cfg, logs: &testkit.SyncBuffer{}}
	run.Stderr = d.logs
	require.NoError(t, run.Start())
	var once sync.Once
	d.stop = func() {
		once.Do(func() {
			require.NoError(t, harness.AskToStop(run.Process))
			require.NoError(t, run.Wait(), "clean exit; log: %s", d.logs)
			cancel()
			_ = run.Wait()
		})
	}
	d.kill = func() {
		once.Do(func() {
			require.NoError(t, run.Process.Kill())
			_ = run.Wait()
			cancel()
		})
	}
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			_ = run.Wait()
		})
	})
	require.Eventually(t, func() bool { return getStatus(d.base+"/readyz") == http.StatusOK }, 20*time.Second,
		50*time.Millisecond, "not ready; log: %s", d.logs)
	return d
}
