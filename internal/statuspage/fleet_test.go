package statuspage

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fleetText is the head office block's text as a person reads it.
func fleetText(t *testing.T, d Data) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<p class="(\w+)" id="fleet">(.*?)</p>`).FindStringSubmatch(render(t, d))
	require.NotNil(t, m, "the page has the head office block")
	return m[1] + ": " + text(m[2])
}

// TestFleetBlock: the page says whether the head office receives this
// till's figures, and how much waits on disk while it does not. Issue 40,
// item 3: only an accepted push, with no failure since, is a ✓; before
// the first one it says "not yet accepted" and what is happening, and a
// push failing since a minute is not "received".
func TestFleetBlock(t *testing.T) {
	refused := `push to the head office: Post "http://hq.example:9090/api/v1/write": dial tcp 10.0.0.9:9090: connect: connection refused`
	for _, c := range []struct {
		name  string
		fleet *Fleet
		want  string
	}{
		{"off", nil, "empty: – The push to the head office is off"},
		{"pushing", &Fleet{Enabled: true, LastSuccess: now.Add(-time.Minute)},
			"allgood: ✓ The head office receives this till's figures; last accepted 14:29:00 UTC, 1m ago."},
		{"waiting for the first push", &Fleet{Enabled: true, Buffered: 40, OldestBuffered: now.Add(-10 * time.Second)},
			"empty: … Not yet accepted by the head office: waiting for the first push; 40 samples wait on disk since 14:29:50 UTC, 10s ago, to be sent oldest first. Sales are not affected."},
		{"the first pushes failing", &Fleet{Enabled: true, Buffered: 40, OldestBuffered: now.Add(-2 * time.Minute),
			LastError: refused, FailingSince: now.Add(-2 * time.Minute)},
			"empty: ✗ Not yet accepted by the head office: failing since 14:28:00 UTC, 2m ago (" + refused + "); 40 samples wait on disk"},
		{"failing for a minute after a success", &Fleet{Enabled: true, LastSuccess: now.Add(-90 * time.Second), Buffered: 8,
			OldestBuffered: now.Add(-time.Minute), LastError: "push to the head office: HTTP 503", FailingSince: now.Add(-time.Minute)},
			"empty: ✗ Not accepted by the head office since 14:28:30 UTC, 1m 30s ago (push to the head office: HTTP 503); 8 samples wait"},
		{"refused", &Fleet{Enabled: true, LastError: "the head office refused the samples: HTTP 401 (they are dropped, not retried)",
			FailingSince: now.Add(-time.Minute), Dropped: 16},
			"empty: ✗ Not yet accepted by the head office: failing since 14:29:00 UTC, 1m ago (the head office refused the samples: HTTP 401 (they are dropped, not retried)). Sales are not affected. 16 unsent samples were dropped"},
		{"nothing accepted for 2h, no error known", &Fleet{Enabled: true, Buffered: 4200, OldestBuffered: now.Add(-2 * time.Hour),
			LastSuccess: now.Add(-2 * time.Hour), Dropped: 7},
			"empty: ✗ Not accepted by the head office since 12:30:00 UTC, 2h ago; 4200 samples wait on disk since 12:30:00 UTC, 2h ago"},
		{"catching up", &Fleet{Enabled: true, Buffered: 4200, OldestBuffered: now.Add(-2 * time.Hour), LastSuccess: now.Add(-5 * time.Second)},
			"empty: … The head office accepts this till's figures again and is catching up: last accepted 14:29:55 UTC, 5s ago; 4200 samples wait"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := upData()
			d.Fleet = c.fleet
			got := fleetText(t, d)
			require.Contains(t, got, c.want)
			if c.name != "pushing" {
				require.NotContains(t, got, "✓")
				require.NotContains(t, got, "receives")
			}
		})
	}
}
