package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// hostile is an upstream that misbehaves in one way on every create (and
// every lookup); it counts the creates it was sent and the bytes it wrote.
type hostile struct {
	srv     *httptest.Server
	creates atomic.Int64
	written atomic.Int64 // body bytes written, all answers together
}

// fiftyMB is the answer size of the issue's report: read whole, it was
// handed to the POS and kept in memory.
const fiftyMB = 50 << 20

func newHostile(t *testing.T, mode string) *hostile {
	h := &hostile{}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			h.creates.Add(1)
		}
		h.answer(w, r, mode)
	}))
	// A write to a till that stopped reading (the 50 MB answer) ends by
	// this deadline rather than hold the server's Close forever: under
	// Wine a write to a client that closed was seen to block (the
	// control package's download tests timed out that way in CI).
	h.srv.Config.WriteTimeout = 30 * time.Second
	h.srv.Start()
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostile) write(w io.Writer, s string) error {
	n, err := io.WriteString(w, s)
	h.written.Add(int64(n))
	return err
}

func (h *hostile) answer(w http.ResponseWriter, r *http.Request, mode string) {
	switch mode {
	case "garbage":
		_ = h.write(w, "<html><body>502 Bad Gateway (but said 200)</body></html>")
	case "no id":
		_ = h.write(w, `{"status":"SUCCESS","date":"2026-11-23 10:00:00","lottery":"SN 00000001","qrData":"1"}`)
	case "50MB":
		// Valid JSON, a SUCCESS with an id (a lookup: district codes),
		// with one field padded to 50 MB.
		head, tail := `{"status":"SUCCESS","id":"123456789012345678901234567890123","pad":"`, `"}`
		if r.Method == http.MethodGet {
			head, tail = `{"msg":"","status":200,"data":[{"branchCode":"01","branchName":"`,
				`","subBranchCode":"02","subBranchName":"B"}]}`
		}
		h.big(w, head, tail)
	case "silent":
		<-r.Context().Done()
	case "trickle":
		w.Header().Set("Content-Type", "application/json")
		for _, c := range `{"status":"SUCCESS","id":"123456789012345678901234567890123"` + strings.Repeat(" ", 1000) + "}" {
			if h.write(w, string(c)) != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// big writes head, padding and tail, fiftyMB in all, and stops at the
// first write error (the daemon closed the connection).
func (h *hostile) big(w http.ResponseWriter, head, tail string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(fiftyMB))
	pad := strings.Repeat("x", 1<<20)
	if h.write(w, head) != nil {
		return
	}
	for range fiftyMB>>20 - 1 {
		if h.write(w, pad) != nil {
			return
		}
	}
	_ = h.write(w, strings.Repeat("x", 1<<20-len(head)-len(tail))+tail)
}

// TestHostileUpstreamCannotIssueASaleAgainAndAgain: whatever a broken tax
// service answers (a 200 that is not JSON, SUCCESS without an id, a 50 MB
// body, nothing at all, or an answer trickling in), a receipt is sent at
// most sync.max_ambiguous times and then held for an operator, never
// marked sent; the POS never receives the broken answer.
func TestHostileUpstreamCannotIssueASaleAgainAndAgain(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"garbage", "no id", "50MB", "silent", "trickle"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			up := newHostile(t, mode)
			cfg := testConfig(t, up.srv.URL)
			cfg.Upstream.Timeout = config.Dur(time.Second)
			d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
			require.NoError(t, err)
			stop := run(t, d)
			defer func() { require.NoError(t, stop()) }()

			resp, body := post(t, d.URL(), testkit.Receipt("h-"+strings.ReplaceAll(mode, " ", "")))
			require.Equal(t, http.StatusAccepted, resp.StatusCode, "%.200s", body)
			require.Less(t, len(body), 4096, "the POS got the broken answer")
			id := resp.Header.Get("X-Queue-Id")
			require.NotEmpty(t, id)

			var e testkit.Entry
			require.Eventually(t, func() bool {
				e = testkit.GetEntry(t, d.URL(), id)
				return e.State == "held"
			}, 30*time.Second, 20*time.Millisecond, "entry never held: %+v", e)
			require.Equal(t, 3, e.Ambiguous)
			require.Contains(t, e.Outcome.Message, "sync.max_ambiguous")
			// Several backoff caps (100 ms) later nothing more was sent.
			time.Sleep(time.Second)
			require.EqualValues(t, 3, up.creates.Load(), "creates sent")
			require.Equal(t, "held", testkit.GetEntry(t, d.URL(), id).State)
			if mode == "50MB" {
				require.Less(t, up.written.Load(), int64(3*fiftyMB), "the daemon read the answers whole")
			}
		})
	}
}

// TestOversizedLookupAnswerIsAFailure: a lookup answer larger than
// upstream.max_answer is not cached and not passed on: the POS gets the
// offline 503, and a second request is not a cache hit.
func TestOversizedLookupAnswerIsAFailure(t *testing.T) {
	t.Parallel()
	up := newHostile(t, "50MB")
	d, err := daemon.New(testConfig(t, up.srv.URL), zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()
	for range 2 {
		resp, err := http.Get(d.URL() + "/api/info/check/getBranchInfo")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%.200s", b)
		require.NotEqual(t, "HIT", resp.Header.Get("X-Cache"))
		require.Less(t, len(b), 4096)
	}
}
