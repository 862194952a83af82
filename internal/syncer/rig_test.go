package syncer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/syncer"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// rig is a worker draining a real queue (bbolt in t.TempDir()) to the
// simulator through the real client.
type rig struct {
	t       testing.TB
	sim     *sim.Sim
	st      *store.Store
	q       *queue.Queue
	w       *syncer.Worker
	answers *syncer.Mailbox
	c       *client.Client
	dbPath  string
	logs    *testkit.SyncBuffer
	cancel  context.CancelFunc
	done    chan struct{}
}

// fastConfig keeps the backoff short so outage tests take seconds.
func fastConfig() syncer.Config {
	return syncer.Config{
		Concurrency: 4, MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, AlertInterval: 50 * time.Millisecond,
	}
}

func newRig(t testing.TB, cfg syncer.Config, opts sim.Options) *rig {
	t.Helper()
	s := sim.New(opts)
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })

	r := &rig{t: t, sim: s, dbPath: filepath.Join(t.TempDir(), "receiptd.db"), logs: &testkit.SyncBuffer{}}
	var err error
	r.st, err = store.Open(r.dbPath, store.Options{})
	require.NoError(t, err)
	r.q, err = queue.Open(context.Background(), r.st, queue.Options{})
	require.NoError(t, err)
	r.c, err = client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: s.URL(), Timeout: 2 * time.Second})
	require.NoError(t, err)
	if cfg.Answers == nil {
		cfg.Answers = syncer.NewMailbox(syncer.MailboxConfig{}, r.logger(), nil)
	}
	r.answers = cfg.Answers
	r.w = syncer.New(r.q, r.c, cfg, r.logger(), nil)
	t.Cleanup(r.close)
	return r
}

// logger writes JSON lines to r.logs, as a log file would get them.
func (r *rig) logger() *zap.Logger {
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(r.logs), zap.DebugLevel))
}

// start runs the worker until close.
func (r *rig) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		r.w.Run(ctx)
	}()
}

// stop stops the worker and waits for it.
func (r *rig) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

// close stops the worker, checks the file's consistency and closes it.
func (r *rig) close() {
	r.stop()
	if r.st != nil {
		require.NoError(r.t, r.st.Check())
		require.NoError(r.t, r.st.Close())
		r.st = nil
	}
}

// enqueue puts body in the queue the way the API does.
func (r *rig) enqueue(body string) queue.Entry {
	r.t.Helper()
	c, err := receipt.ParseCreate([]byte(body))
	require.NoError(r.t, err)
	e, replayed, err := r.q.Enqueue(context.Background(), queue.NewReceipt{
		IdemKey: receipt.DefaultKey(c, time.Now(), time.UTC), Body: []byte(body),
		BodyHash: receipt.Fingerprint([]byte(body)), MerchantTin: c.MerchantTin, PosNo: c.PosNo, BillIDSuffix: c.BillIDSuffix,
	})
	require.NoError(r.t, err)
	require.False(r.t, replayed)
	return e
}

// enqueueN enqueues n receipts with suffixes prefix0..prefixN-1.
func (r *rig) enqueueN(prefix string, n int) []queue.Entry {
	out := make([]queue.Entry, n)
	for i := range out {
		out[i] = r.enqueue(testkit.Receipt(fmt.Sprintf("%s%04d", prefix, i)))
	}
	return out
}

// waitState waits until every entry is in a state that is not pending.
func (r *rig) waitSettled(within time.Duration) {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		counts, err := r.q.Counts()
		require.NoError(r.t, err)
		return counts[queue.StateQueued]+counts[queue.StateSending]+counts[queue.StateDeleteQueued] == 0
	}, within, 10*time.Millisecond, "queue did not settle")
}

// get reads an entry.
func (r *rig) get(id string) queue.Entry {
	r.t.Helper()
	e, err := r.q.Get(id)
	require.NoError(r.t, err)
	return e
}

// issuedCount counts the simulator's issued receipts per billIdSuffix.
func (r *rig) issuedCount() map[string]int {
	n := map[string]int{}
	for _, is := range r.sim.Receipts() {
		n[is.BillIDSuffix]++
	}
	return n
}

// attempts counts recorded attempts with the given result over entries.
func attempts(entries []queue.Entry, res queue.Result) int {
	n := 0
	for _, e := range entries {
		for _, a := range e.Attempts {
			if a.Result == res {
				n++
			}
		}
	}
	return n
}

func containsAny(haystack string, needles ...string) string {
	for _, n := range needles {
		if n != "" && strings.Contains(haystack, n) {
			return n
		}
	}
	return ""
}
