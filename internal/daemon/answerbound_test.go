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

// TestLateAnswersStayWithinTheirByteBound: an upstream whose every create
// answer is a valid SUCCESS padded to 900 KB (under upstream.max_answer)
// cannot make receiptd hold more answers than accept.answer_mb allows:
// the newest stay fetchable, the oldest are pushed out (410).
func TestLateAnswersStayWithinTheirByteBound(t *testing.T) {
	t.Parallel()
	const n, pad = 10, 900 << 10
	var seq atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"status":"SUCCESS","id":"%033d","date":"2026-11-23 10:00:00","lottery":"AB 00000001","qrData":"1","pad":"%s"}`,
			seq.Add(1), strings.Repeat("x", pad))
	}))
	t.Cleanup(up.Close)
	cfg := testConfig(t, up.URL)
	cfg.Accept.Wait = config.Dur(0) // nothing is given in time: every answer waits for the late route
	cfg.Accept.AnswerMB = 4
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	var ids []string
	for i := range n {
		resp, body := post(t, d.URL(), testkit.Receipt(fmt.Sprint("big", i)))
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", body)
		ids = append(ids, resp.Header.Get("X-Queue-Id"))
	}
	for _, id := range ids {
		require.Eventually(t, func() bool { return testkit.GetEntry(t, d.URL(), id).State == "sent" }, 20*time.Second, 10*time.Millisecond)
	}
	// Before any is fetched: the metrics show the bound kept. An answer is
	// handed over just after its entry reads sent, so the last one's drop
	// may come a moment later.
	require.Eventually(t, func() bool {
		_, dropped := answerMetrics(t, d.URL())
		return dropped >= float64(n-4)
	}, 5*time.Second, 10*time.Millisecond, "receiptd_answers_dropped_total")
	held, _ := answerMetrics(t, d.URL())
	require.LessOrEqual(t, held, float64(cfg.Accept.AnswerMB<<20), "receiptd_answers_held_bytes")

	codes := make([]int, n)
	kept := 0
	for i, id := range ids {
		require.Eventually(t, func() bool {
			resp, err := http.Get(d.URL() + "/receiptd/entries/" + id + "/answer")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
			return resp.StatusCode != http.StatusAccepted
		}, 10*time.Second, 10*time.Millisecond)
		if codes[i] == http.StatusOK {
			kept++
		}
	}
	require.LessOrEqual(t, kept, 4, "4 MiB hold at most four 900 KB answers: %v", codes)
	require.GreaterOrEqual(t, kept, 3, "the newest answers are kept: %v", codes)
	require.Equal(t, http.StatusOK, codes[n-1], "the newest is kept: %v", codes)
	require.Equal(t, http.StatusGone, codes[0], "the oldest went first: %v", codes)
}

// answerMetrics reads receiptd_answers_held_bytes and
// receiptd_answers_dropped_total from /metrics.
func answerMetrics(t *testing.T, base string) (heldBytes, dropped float64) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	found := 0
	for _, line := range strings.Split(string(text), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		switch name {
		case "receiptd_answers_held_bytes":
			_, err = fmt.Sscan(v, &heldBytes)
		case "receiptd_answers_dropped_total":
			_, err = fmt.Sscan(v, &dropped)
		default:
			continue
		}
		require.NoError(t, err, line)
		found++
	}
	require.Equal(t, 2, found, "both series in /metrics")
	return heldBytes, dropped
}
