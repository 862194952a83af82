package fleetcontrol

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/control/controltest"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestMain removes the binary testkit.Binary built.
func TestMain(m *testing.M) { testkit.Main(m) }

// The fleet: 20 tills in 4 shops of 5, WebSocket and HTTP polling
// alternating.
const (
	tillCount     = 20
	shopSize      = 5
	pollEvery     = time.Second
	rollbackAfter = 2 * time.Second
	postEvery     = 400 * time.Millisecond // each till's background pace
)

// till is one receiptd process of the fleet.
type till struct {
	name, shop string
	ws         bool
	mu         sync.Mutex
	p          *harness.Process // replaced by a restart
}

func (tl *till) proc() *harness.Process {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.p
}

func (tl *till) url() string { return tl.proc().URL() }

// tillConfig is a till's own file: the simulator upstream, the head office
// ho over its transport, its shop and till as [fleet.labels].
func tillConfig(t *testing.T, tl *till, upstream string, ho *controltest.Server) config.Config {
	cfg := testkit.Config(t, upstream)
	cfg.Control.OpAMPURL = ho.HTTPURL()
	if tl.ws {
		cfg.Control.OpAMPURL = ho.WSURL()
	}
	cfg.Control.PollEvery = config.Dur(pollEvery)
	cfg.Control.RollbackAfter = config.Dur(rollbackAfter)
	cfg.Control.Allow = ownAllow
	cfg.Fleet.Labels = map[string]string{"shop": tl.shop, "till": tl.name}
	cfg.Accept.Wait = config.Dur(300 * time.Millisecond)
	return cfg
}

// startFleet starts the tills at once and stops them when the test ends.
func startFleet(t *testing.T, upstream string, ho *controltest.Server) []*till {
	return startTills(t, testkit.Binary(t), func(tl *till) config.Config { return tillConfig(t, tl, upstream, ho) })
}

// startTills starts tillCount tills of bin at once, each on the config
// configure makes for it, and stops them when the test ends.
func startTills(t *testing.T, bin string, configure func(*till) config.Config) []*till {
	tills := make([]*till, tillCount)
	for i := range tills {
		tills[i] = &till{name: fmt.Sprintf("T%02d", i), shop: fmt.Sprintf("S%d", i/shopSize+1), ws: i%2 == 0}
	}
	var wg sync.WaitGroup
	errs := make([]error, tillCount)
	for i, tl := range tills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tl.p, errs[i] = startTill(bin, t.TempDir(), configure(tl))
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, tl := range tills {
			if p := tl.proc(); p != nil {
				stopTill(t, p)
			}
		}
	})
	for i, err := range errs {
		require.NoError(t, err, "start till %s", tills[i].name)
	}
	return tills
}

func startTill(bin, dir string, cfg config.Config) (*harness.Process, error) {
	p, err := harness.Start(context.Background(), bin, dir, cfg)
	if err != nil {
		return nil, err
	}
	return p, waitReady(p)
}

func waitReady(p *harness.Process) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx); err != nil {
		return fmt.Errorf("%w; log: %s", err, p.LogTail(4000))
	}
	return nil
}

func stopTill(t *testing.T, p *harness.Process) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Errorf("stop receiptd: %v; log: %s", err, p.LogTail(4000))
	}
}

// restart stops tl's process and starts it again from the same file and
// data directory.
func restart(t *testing.T, tl *till) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	stopTill(t, tl.p)
	p, err := harness.StartFile(context.Background(), testkit.Binary(t), tl.p.ConfigPath())
	require.NoError(t, err)
	tl.p = p
	require.NoError(t, waitReady(p), "restart %s", tl.name)
}

// ledger is every receipt posted and the answers they got.
type ledger struct {
	mu       sync.Mutex
	till     map[string]string // billIdSuffix → till name
	answers  map[int]int
	connErrs int
}

// post sends receipt suffix to tl until it gets an HTTP answer (a POS
// sends the same receipt again after a connection error, which the
// idempotency key makes safe) and returns its status.
func (l *ledger) post(t *testing.T, tl *till, suffix string) int {
	body := testkit.Receipt(suffix)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Post(tl.url()+"/rest/receipt", "application/json", strings.NewReader(body))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			l.mu.Lock()
			l.till[suffix] = tl.name
			l.answers[resp.StatusCode]++
			l.mu.Unlock()
			return resp.StatusCode
		}
		l.mu.Lock()
		l.connErrs++
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Errorf("post %s to %s: no answer for a minute: %v", suffix, tl.name, err)
			return 0
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postOnEvery starts a POS on every till (postLoop) and returns what stops
// them all and waits for their last sale.
func (l *ledger) postOnEvery(t *testing.T, tills []*till) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, tl := range tills {
		wg.Go(func() { l.postLoop(ctx, t, tl) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// postLoop posts a receipt to tl every postEvery until ctx ends.
func (l *ledger) postLoop(ctx context.Context, t *testing.T, tl *till) {
	for i := 0; ; i++ {
		l.post(t, tl, fmt.Sprintf("%s-%d", tl.name, i))
		select {
		case <-ctx.Done():
			return
		case <-time.After(postEvery):
		}
	}
}

// entriesStored is the number of entries /receiptd/status counts on tl.
func entriesStored(t *testing.T, tl *till) int {
	resp, err := http.Get(tl.url() + "/receiptd/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st struct {
		Counts map[string]int `json:"counts"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	n := 0
	for _, c := range st.Counts {
		n += c
	}
	return n
}

// checkOnce requires every receipt posted to be issued by the simulator
// exactly once and stored once on the till it was posted to.
func (l *ledger) checkOnce(t *testing.T, s *sim.Sim, tills []*till) {
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Eventually(t, func() bool { return len(s.Receipts()) >= len(l.till) }, 2*time.Minute, 100*time.Millisecond,
		"every receipt posted reaches the tax service")
	issued := map[string]int{}
	for _, r := range s.Receipts() {
		issued[r.BillIDSuffix]++
	}
	perTill := map[string]int{}
	for suffix, name := range l.till {
		require.Equal(t, 1, issued[suffix], "receipt %s (till %s) issued %d times", suffix, name, issued[suffix])
		perTill[name]++
	}
	require.Len(t, issued, len(l.till), "the tax service issued only receipts that were posted")
	for _, tl := range tills {
		require.Equal(t, perTill[tl.name], entriesStored(t, tl), "till %s stores each receipt posted to it once", tl.name)
	}
}
