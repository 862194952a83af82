package statuspage

import (
	"bytes"
	"context"
	"errors"
	stdhtml "html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

var now = time.Date(2026, 11, 22, 14, 30, 0, 0, time.UTC)

func allCounts() map[string]int {
	return map[string]int{
		"queued": 7, "sending": 1, "sent": 1234, "payment": 2, "rejected": 3,
		"held": 0, "cancelled": 4, "delete_queued": 1, "deleted": 5, "delete_rejected": 0,
	}
}

func upData() Data {
	return Data{
		Version: "1.2.3", Now: now,
		UpstreamUp: true, UpstreamSince: now.Add(-(5*time.Hour + 7*time.Minute)),
		LastSuccess: now.Add(-12 * time.Second),
		Counts:      allCounts(),
		Alert:       AlertNone, OldestUnsentAge: 40 * time.Second,
		UnsentWarn: 24 * time.Hour, UnsentCritical: 72 * time.Hour,
		Failures: []Failure{
			{QueueID: "Q000000000041", Kind: "receipt", State: "rejected", At: now.Add(-3 * time.Minute), Message: "merchantTin: not registered", Attempts: 1},
			{QueueID: "Q000000000040", Kind: "receipt", State: "queued", At: now.Add(-1 * time.Minute), Message: "connection refused", Attempts: 4},
		},
		Cache: []CacheKind{
			{Kind: "branchInfo", Entries: 1, OldestAge: 2 * time.Hour, LastRefresh: now.Add(-10 * time.Minute)},
			{Kind: "classification", Entries: 0},
		},
	}
}

func downData() Data {
	d := upData()
	d.UpstreamUp = false
	d.UpstreamSince = now.Add(-(2*time.Hour + 13*time.Minute + 9*time.Second))
	d.LastSuccess = now.Add(-(2*time.Hour + 14*time.Minute))
	d.LastError = "dial tcp 127.0.0.1:9: connect: connection refused"
	d.Alert, d.OldestUnsentAge = AlertWarn, 25*time.Hour
	d.Cache[0].LastError = "upstream unreachable"
	d.Cache[1].LastError = "connection refused"
	return d
}

func render(t *testing.T, d Data) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, Render(&b, d))
	return b.String()
}

// text strips tags and collapses spaces, so facts can be checked as a
// person reads them, whatever the markup around them.
func text(html string) string {
	s := regexp.MustCompile(`(?s)<style>.*?</style>|<[^>]*>`).ReplaceAllString(html, " ")
	return strings.Join(strings.Fields(stdhtml.UnescapeString(s)), " ")
}

func TestRenderFacts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		data   Data
		want   []string
		absent []string
	}{
		{
			name: "up",
			data: upData(),
			want: []string{
				"Tax service ✓ Reachable", "up for 5h 7m (since 09:23:00 UTC)",
				"Last successful send to the tax service: 12s ago (14:29:48 UTC)",
				"Oldest unsent receipt 40s ✓ OK",
				"9 waiting", "5 need attention", "1239 sent or deleted",
				"queued 7 waiting to be sent", "sent 1234 accepted by the tax service",
				"rejected 3 ⚠ Needs attention: refused by the tax service",
				"held 0 answer lost",
				"Q000000000041 receipt rejected 1 merchantTin: not registered Correct it in the POS",
				"Q000000000040 receipt queued 4 Nothing answered at the tax service's address (connection refused)",
				"as recorded connection refused Nothing: receiptd keeps sending it.",
				"branchInfo 1 2h 10m ago (14:20:00 UTC) ✓ OK",
				"classification 0 — never since start – Nothing cached yet",
				"version 1.2.3", "updated 14:30:00 UTC",
			},
			absent: []string{"Unreachable", "Warning", "Critical", "Last error", "Earlier problem"},
		},
		{
			name: "down",
			data: downData(),
			want: []string{
				"✗ Unreachable", "down for 2h 13m (since 12:16:51 UTC)",
				"Why, and what to do: Needs attention",
				"The error as recorded dial tcp 127.0.0.1:9: connect: connection refused",
				"Last successful send to the tax service: 2h 14m ago",
				"1d 1h ⚠ Warning: older than 24h (alerts.unsent_warn)",
				"Last refresh failed (serving stored data): upstream unreachable",
				"classification 0 — never since start ⚠ Last refresh failed (nothing stored to serve): connection refused",
			},
			absent: []string{"Reachable ", "Critical", "Earlier problem"},
		},
		{
			name: "critical",
			data: func() Data {
				d := downData()
				d.Alert, d.OldestUnsentAge = AlertCritical, 80*time.Hour
				d.UpstreamSince = now.Add(-80 * time.Hour)
				return d
			}(),
			want: []string{
				"down for 3d 8h (since 2026-11-19 06:30:00 UTC)",
				"3d 8h ✗ Critical: older than 72h (alerts.unsent_critical)",
			},
			absent: []string{"Warning", "3 days"},
		},
		{
			name: "empty",
			data: Data{Now: now, UpstreamUp: true, Alert: AlertNone},
			want: []string{
				"version unknown", "Reachable", "up (since: unknown)",
				"Last successful send to the tax service: none since receiptd started",
				"nothing waiting ✓ OK", "0 waiting", "none need attention",
				"queued 0", "delete_rejected 0", "No failures recorded.", "No lookups cached yet.",
			},
			absent: []string{"When Queue id", "Lookup Entries"},
		},
		{
			name: "unknown state and alert",
			data: Data{Now: now, UpstreamUp: true, Alert: "purple", Counts: map[string]int{"limbo": 2}},
			want: []string{"limbo 2 (a state this page does not know)", `? Unknown ageing level "purple"`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			html := render(t, c.data)
			txt := text(html)
			for _, w := range c.want {
				require.Contains(t, txt, w)
			}
			for _, a := range c.absent {
				require.NotContains(t, txt, a)
			}
		})
	}
}

// TestRenderPageShape checks what the browser relies on: the refresh, the
// data: favicon, no script and no external asset.
func TestRenderPageShape(t *testing.T) {
	t.Parallel()
	html := render(t, downData())
	require.True(t, strings.HasPrefix(html, "<!doctype html>"))
	require.Contains(t, html, `<meta http-equiv="refresh" content="5">`)
	require.Contains(t, html, `<link rel="icon" href="data:,">`)
	require.Contains(t, html, `<html lang="en">`)
	require.Contains(t, html, "<title>receiptd: 4 need attention · tax service unreachable, 9 waiting</title>")
	require.NotContains(t, strings.ToLower(html), "<script")
	require.NotRegexp(t, `(src|href)="(https?:)?//`, html)
	require.Equal(t, 4, strings.Count(html, "<table>"), "rejected entries, states, failures, cache tables")
	require.Contains(t, html, `<th scope="col">State</th>`)
}

func TestRenderFailuresNewestFirstAndCapped(t *testing.T) {
	t.Parallel()
	d := upData()
	d.Failures = nil
	for i := range MaxFailures + 3 {
		d.Failures = append(d.Failures, Failure{QueueID: "Q" + strings.Repeat("0", 8) + string(rune('A'+i%26)), At: now.Add(-time.Duration(i) * time.Minute), Message: "m"})
	}
	d.Failures[0].Message, d.Failures[len(d.Failures)-1].Message = "newest", "oldest"
	d.Failures[0], d.Failures[5] = d.Failures[5], d.Failures[0]
	txt := text(render(t, d))
	require.Contains(t, txt, "Newest 50 shown; 3 older not shown.")
	require.Contains(t, txt, "newest")
	require.NotContains(t, txt, "oldest")
	require.Less(t, strings.Index(txt, "newest"), strings.Index(txt, "1m ago"))
}

func TestRenderEscapesHostileText(t *testing.T) {
	t.Parallel()
	const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	d := downData()
	d.Version, d.LastError = evil, evil
	d.Failures[0].Message, d.Failures[0].QueueID = evil, `"><script>alert(2)</script>`
	d.Cache[0].Kind, d.Cache[0].LastError = evil, evil
	d.Counts = map[string]int{evil: 1}
	html := render(t, d)
	require.NotContains(t, strings.ToLower(html), "<script")
	require.NotContains(t, html, "<img")
	require.Contains(t, html, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;")
	require.NotContains(t, html, `href="/receiptd/entries/">`)
}

func TestHuman(t *testing.T) {
	t.Parallel()
	cases := map[time.Duration]string{
		-time.Hour:                            "less than a second",
		0:                                     "less than a second",
		999 * time.Millisecond:                "less than a second",
		time.Second:                           "1s",
		45*time.Second + 900*time.Millisecond: "45s",
		5*time.Minute + 12*time.Second:        "5m 12s",
		5 * time.Minute:                       "5m",
		2*time.Hour + 13*time.Minute + 59*time.Second: "2h 13m",
		2*time.Hour + 30*time.Second:                  "2h",
		24 * time.Hour:                                "1d",
		76*time.Hour + 5*time.Minute:                  "3d 4h",
	}
	for d, want := range cases {
		require.Equal(t, want, human(d), "human(%s)", d)
	}
	require.Equal(t, "24h", threshold(24*time.Hour))
	require.Equal(t, "1h 30m", threshold(90*time.Minute))
}

func TestClockUsesNowsLocation(t *testing.T) {
	t.Parallel()
	ub := time.FixedZone("ULAT", 8*3600)
	n := time.Date(2026, 11, 22, 23, 0, 0, 0, ub)
	require.Equal(t, "22:00:00 ULAT", clock(n.Add(-time.Hour), n))
	require.Equal(t, "2026-11-21 23:00:00 ULAT", clock(n.Add(-24*time.Hour).UTC(), n))
	require.Equal(t, "unknown", clock(time.Time{}, n))
}

func TestHandler(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	var fail error
	src := func(ctx context.Context) (Data, error) {
		require.NotNil(t, ctx)
		return downData(), fail
	}
	srv := httptest.NewServer(Handler(src, zap.New(core)))
	defer srv.Close()

	get := func(method, path string) (*http.Response, string) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}

	resp, body := get(http.MethodGet, "/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, text(body), "Unreachable")

	resp, body = get(http.MethodHead, "/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, body)
	require.NotEqual(t, "0", resp.Header.Get("Content-Length"))

	resp, _ = get(http.MethodPost, "/")
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))

	resp, _ = get(http.MethodGet, "/favicon.ico")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Zero(t, logs.Len())

	fail = errors.New("bbolt: secret internal detail")
	resp, body = get(http.MethodGet, "/")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Contains(t, body, "status page unavailable")
	require.NotContains(t, body, "secret internal detail")
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Equal(t, 1, logs.FilterMessage("status page").Len())
	require.Contains(t, logs.All()[0].ContextMap()["error"], "secret internal detail")
}

func TestHandlerNilLogger(t *testing.T) {
	t.Parallel()
	h := Handler(func(context.Context) (Data, error) { return Data{}, errors.New("boom") }, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
}

func BenchmarkRender(b *testing.B) {
	d := downData()
	for range MaxFailures {
		d.Failures = append(d.Failures, d.Failures[0])
	}
	for b.Loop() {
		if err := Render(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}
