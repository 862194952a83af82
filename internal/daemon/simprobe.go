package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
)

// simProbeTimeout bounds the one question asked of base_url at start.
const simProbeTimeout = time.Second

// followSimulator keeps a tryout on this computer: when upstream.base_url
// is loopback, a lookup URL is still at its live default, and base_url
// answers as receiptd's own simulator (its control API, GET /sim/faults,
// which no PosAPI has), those lookup URLs follow base_url, which the
// simulator serves too. A till's PosAPI does not answer that route, so a
// till keeps its lookups on the public API; a base_url that does not
// answer at start changes nothing. It logs what it moved.
func followSimulator(ctx context.Context, u *config.Upstream, log *zap.Logger) {
	if !config.IsLoopbackURL(u.BaseURL) || len(u.AtLiveDefault()) == 0 || !isSimulator(ctx, u.BaseURL) {
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
