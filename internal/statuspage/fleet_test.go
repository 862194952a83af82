package statuspage

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFleetBlock: the page says whether the head office receives this
// till's figures, and how much waits on disk while it does not.
func TestFleetBlock(t *testing.T) {
	render := func(f *Fleet) string {
		d := upData()
		d.Fleet = f
		var b bytes.Buffer
		require.NoError(t, Render(&b, d))
		return b.String()
	}
	for _, c := range []struct {
		name  string
		fleet *Fleet
		want  string
	}{
		{"off", nil, "The push to the head office is off"},
		{"pushing", &Fleet{Enabled: true, LastSuccess: now.Add(-time.Minute)},
			"The head office receives this till&#39;s figures; last accepted"},
		{"never pushed yet, nothing old", &Fleet{Enabled: true, Buffered: 40, OldestBuffered: now.Add(-10 * time.Second)},
			"not since receiptd started"},
		{"head office down", &Fleet{Enabled: true, Buffered: 4200, OldestBuffered: now.Add(-2 * time.Hour), LastSuccess: now.Add(-2 * time.Hour), Dropped: 7},
			"The head office is not accepting this till&#39;s figures: 4200 samples wait on disk since"},
	} {
		t.Run(c.name, func(t *testing.T) {
			page := render(c.fleet)
			require.Contains(t, page, `id="fleet"`)
			require.Contains(t, page, c.want)
		})
	}
	require.Contains(t, render(&Fleet{Enabled: true, Buffered: 1, OldestBuffered: now.Add(-time.Hour), Dropped: 7}),
		"7 unsent samples were dropped")
}
