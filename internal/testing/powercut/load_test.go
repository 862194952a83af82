package powercut_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// Load of a round.
const (
	tills      = 4                       // POS goroutines posting receipts
	maxReplays = 40                      // replays checked per round
	minLoad    = 50 * time.Millisecond   // shortest time to the cut
	maxLoad    = 1500 * time.Millisecond // longest
	armWrites  = 3000                    // a cut during a write comes within this many
)

// ack is a receipt the daemon answered 2xx.
type ack struct {
	queueID, key string
	body         []byte
}

var client = &http.Client{Timeout: 10 * time.Second}

// round starts the daemon on what the last cut left, checks it, puts it
// under load with the upstream down (entries only queue) or up (entries
// are sent, so pages are freed and reused), and cuts the power at a
// random moment.
func (b *bench) round(r int) {
	start := time.Now()
	p := b.check(r, true)
	if p == nil {
		return
	}
	checked := time.Since(start)
	up := r%2 == 1
	require.NoError(b.t, b.sim.SetFaults(sim.Faults{Down: !up}))
	writes := b.disk.Stats().Writes
	n, when := b.load(r, p)
	b.tot.rounds++
	b.t.Logf("round %d: upstream up=%v, cut %s (%d writes), %d receipts acknowledged (check and start %s, round %s)",
		r, up, when, b.disk.Stats().Writes-writes, n, checked.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// cutMoment picks when this round's power cut comes: half the rounds at a
// random time, half during a random write (inside a commit, between its
// writes and its fsync, which a random time mostly misses). An armed cut
// that no write reaches comes at maxLoad.
//
// Independently, with b.partial, half the cuts keep a random part of the
// unsynced writes (Disk.KeepAtNextCut) instead of none.
func (b *bench) cutMoment() (wait <-chan struct{}, d time.Duration, when string) {
	if b.partial && b.rng.IntN(2) == 0 {
		b.disk.KeepAtNextCut(rand.New(rand.NewPCG(b.rng.Uint64(), 0)))
		b.tot.partial++
		defer func() { when += ", keeping part of the unsynced writes" }()
	}
	if b.rng.IntN(2) == 0 {
		d = minLoad + time.Duration(b.rng.Int64N(int64(maxLoad-minLoad)))
		return nil, d, "after " + d.Round(time.Millisecond).String()
	}
	n := 1 + b.rng.Uint64N(armWrites)
	return b.disk.PowerOffAtWrite(n), maxLoad, fmt.Sprintf("during write %d", n)
}

// startupCut starts the daemon on a fresh disk and cuts the power during
// its start (creating the database, migrating): nothing was acknowledged,
// but the next start must still find a usable data directory.
func (b *bench) startupCut() {
	p, err := harness.Start(b.ctx, b.bin, b.cfg, b.config())
	require.NoError(b.t, err)
	time.Sleep(time.Duration(b.rng.Int64N(int64(200 * time.Millisecond))))
	b.cutPower(p)
}

// check verifies the disk after a cut: bbolt's check on the file, a start
// of the daemon, every acknowledged receipt listed and the last round's
// replayed by key. It returns the running daemon if keep, else stops it.
// A disk that fails is counted and given up (the next round starts fresh).
func (b *bench) check(r int, keep bool) *harness.Process {
	if missing, err := b.checkFile(); err != nil {
		if !missing {
			b.tot.corrupt++
		}
		b.t.Logf("round %d: database after the cut: %v", r, err)
		b.abandon()
		return nil
	}
	p, err := harness.Start(b.ctx, b.bin, b.cfg, b.config())
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = p.Kill() }) // a failed check leaves no daemon running
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := p.WaitReady(ctx); err != nil {
		_ = p.Kill()
		b.tot.refused++
		b.t.Logf("round %d: receiptd does not start after the cut: %v", r, err)
		b.abandon()
		return nil
	}
	b.verify(r, p)
	if keep {
		return p
	}
	require.NoError(b.t, p.Kill())
	return nil
}

// abandon gives up the current disk: the receipts acknowledged on it are
// lost, since the daemon cannot have them.
func (b *bench) abandon() {
	if len(b.acks) > 0 {
		b.t.Logf("LOST %d acknowledged receipts with the data directory", len(b.acks))
		b.tot.lost += len(b.acks)
	}
	if b.m != nil {
		require.NoError(b.t, b.m.Unmount())
		b.m = nil
	}
	b.disk = nil
}

// verify counts acknowledged receipts that the daemon no longer has.
func (b *bench) verify(r int, p *harness.Process) {
	listed, err := listEntries(b.ctx, p.URL())
	require.NoError(b.t, err)
	for i, a := range b.acks {
		// The receipt's billIdSuffix is its key: a queueId now held by
		// another receipt (a lost commit's sequence number issued again)
		// is a loss too.
		if suffix, ok := listed[a.queueID]; !ok || suffix != a.key {
			b.tot.lost++
			b.t.Logf("round %d: LOST %s (key %s; that queueId now holds %q)", r, a.queueID, a.key, suffix)
			continue
		}
		b.tot.verified++
		if i < b.last || i >= b.last+maxReplays {
			continue
		}
		got, err := post(b.ctx, p.URL(), a.key, a.body)
		switch {
		case err != nil:
			b.t.Errorf("round %d: replay of %s: %v", r, a.queueID, err)
		case got.queueID != a.queueID || !got.replayed:
			b.tot.lost++
			b.t.Logf("round %d: LOST idempotency of %s: replay answered %s replayed=%v", r, a.queueID, got.queueID, got.replayed)
		default:
			b.tot.replayed++
		}
	}
	b.last = len(b.acks)
}

// load posts receipts from several tills until the cut (see cutMoment),
// cuts the power, and returns how many receipts were acknowledged and when
// the cut came.
func (b *bench) load(r int, p *harness.Process) (int, string) {
	armed, d, when := b.cutMoment()
	ctx, stop := context.WithCancel(b.ctx)
	var mu sync.Mutex
	var got []ack
	var wg sync.WaitGroup
	for i := range tills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				key := fmt.Sprintf("%s-r%d-t%d-%d", b.tag, r, i, n)
				body := sim.SampleReceipt(fmt.Sprintf("POS%d", i), key)
				a, err := post(ctx, p.URL(), key, body)
				if err != nil {
					return // the daemon is gone, or the test is ending
				}
				mu.Lock()
				got = append(got, ack{queueID: a.queueID, key: key, body: body})
				mu.Unlock()
			}
		}()
	}
	select {
	case <-armed:
	case <-time.After(d):
	}
	b.cutPower(p)
	stop()
	wg.Wait()
	b.acks = append(b.acks, got...)
	b.tot.acknowledged += len(got)
	return len(got), when
}

// answer is what a 2xx to a create says.
type answer struct {
	queueID  string
	replayed bool
}

// post creates a receipt; any answer but a 2xx with a queueId is an error.
func post(ctx context.Context, base, key string, body []byte) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/rest/receipt", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Prefer", "wait=0")
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
	qid := resp.Header.Get("X-Queue-Id")
	if resp.StatusCode/100 != 2 || qid == "" {
		return answer{}, fmt.Errorf("status %d, queueId %q: %s", resp.StatusCode, qid, msg)
	}
	return answer{queueID: qid, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}, nil
}

// listEntries reads every entry, page by page: queueId → billIdSuffix.
func listEntries(ctx context.Context, base string) (map[string]string, error) {
	list, err := testkit.ListEntries[struct {
		QueueID      string `json:"queueId"`
		BillIDSuffix string `json:"billIdSuffix"`
	}](ctx, client, base)
	if err != nil {
		return nil, err
	}
	all := map[string]string{}
	for _, e := range list {
		all[e.QueueID] = e.BillIDSuffix
	}
	return all, nil
}

// logTail is the end of the daemon's log, for a failing round.
func (b *bench) logTail() string {
	data, err := os.ReadFile(filepath.Join(b.cfg, "receiptd.log"))
	if err != nil {
		return err.Error()
	}
	return string(data[max(0, len(data)-3000):])
}
