package api_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
)

// TestFailedAuthLogWindow: the first failure is logged at once, the ones
// in the next minute are summed into the first line after it, and a clock
// put back does not silence the log.
func TestFailedAuthLogWindow(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := newEnv(t, envOpts{noWorker: true, api: api.Options{Token: "s3cret-token-0123", Now: clock}})
	fail := func(n int) {
		for range n {
			require.Equal(t, http.StatusUnauthorized, e.do(http.MethodGet, "/receiptd/status", "", "Authorization", "Bearer nope").code)
		}
	}
	counts := func() []int64 {
		var out []int64
		for _, l := range e.logs.FilterMessageSnippet("failed authentication").All() {
			out = append(out, l.ContextMap()["failures"].(int64))
		}
		return out
	}
	fail(5)
	require.Equal(t, []int64{1}, counts())
	advance(59 * time.Second)
	fail(3)
	require.Equal(t, []int64{1}, counts(), "within the minute: counted, not logged")
	advance(2 * time.Second)
	fail(1)
	require.Equal(t, []int64{1, 8}, counts(), "the next line sums the failures since the last")
	advance(-time.Hour)
	fail(1)
	require.Equal(t, []int64{1, 8, 1}, counts(), "a clock put back logs at once")
}
