package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
)

// simProbeTimeout bounds the one question asked of a base_url.
const simProbeTimeout = time.Second

// simAnswers remembers, by base_url, whether it answered as receiptd's
// simulator, so that a process asks each base_url once: a Supervisor keeps
// one for every Daemon it builds, and a swap that keeps base_url (a head
// office's config applied in place) uses the answer given at start instead
// of asking a till's PosAPI again (a 404, or up to simProbeTimeout when it
// hangs). A swap to another base_url asks that one, once. Safe for
// concurrent use; an answer is never asked again, whatever it was.
type simAnswers struct {
	mu      sync.Mutex // held while asking: a second caller waits for the answer
	answers map[string]bool
}

func newSimAnswers() *simAnswers { return &simAnswers{answers: map[string]bool{}} }

// isSimulator answers as the function isSimulator does for base, which
// it asks only the first time base is given.
func (a *simAnswers) isSimulator(ctx context.Context, base string) bool {
	key := strings.TrimSuffix(base, "/")
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.answers[key]; ok {
		return v
	}
	v := isSimulator(ctx, key)
	a.answers[key] = v
	return v
}

// followSimulator keeps a tryout on this computer: when upstream.base_url
// is loopback, a lookup URL is still at its live default, and base_url
// answers as receiptd's own simulator (its /sim/ API, GET /sim/faults,
// which no PosAPI has), those lookup URLs follow base_url, which the
// simulator serves too. A till's PosAPI does not answer that route, so a
// till keeps its lookups on the public API; a base_url that does not
// answer when first asked changes nothing. sims holds the answers already
// given in this process (nil: none, ask). It logs what it moved.
func followSimulator(ctx context.Context, u *config.Upstream, sims *simAnswers, log *zap.Logger) {
	if sims == nil {
		sims = newSimAnswers()
	}
	if !config.IsLoopbackURL(u.BaseURL) || len(u.AtLiveDefault()) == 0 || !sims.isSimulator(ctx, u.BaseURL) {
		return
	}
	moved := u.FollowAtLiveDefault()
	log.Info("upstream.base_url is receiptd's simulator, so the lookup URLs left at their live defaults follow it: nothing leaves this computer",
		zap.Strings("keys", moved), zap.String("base_url", u.BaseURL))
}

// isSimulator reports whether base answers GET /sim/faults with the
// simulator's JSON object of faults.
func isSimulator(ctx context.Context, base string) bool {
	ctx, cancel := context.WithTimeout(ctx, simProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/sim/faults", nil)
	if err != nil {
		return false
	}
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var faults map[string]json.RawMessage
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&faults) != nil {
		return false
	}
	_, ok := faults["down"]
	return ok
}
