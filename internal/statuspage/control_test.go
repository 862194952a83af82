package statuspage

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestControlOnThePage(t *testing.T) {
	url := "wss://hq.chain.example/v1/opamp"
	for _, tc := range []struct {
		name      string
		control   *Control
		attention []string // in the first section, in order
	}{
		{"off", nil, []string{"✓ Nothing needs attention"}},
		{"reached", &Control{URL: url, LastContact: now.Add(-time.Minute), Started: now.Add(-48 * time.Hour), RemoteStatus: "APPLIED"},
			[]string{"✓ Nothing needs attention"}},
		{"never reached, started an hour ago", &Control{URL: url, Started: now.Add(-time.Hour)},
			[]string{"✓ Nothing needs attention"}},
		{"remote config failed", &Control{URL: url, LastContact: now, Started: now.Add(-time.Hour), RemoteStatus: "FAILED",
			RemoteMessage: "the remote config: 1 problem:\n  line 2: auth.token: can never be set remotely"},
			[]string{"Needs attention (1)", "The head office's last configuration was not applied", "runs on with the configuration it had",
				"line 2: auth.token: can never be set remotely", "Tell the head office"}},
		{"not reached for a day", &Control{URL: url, LastContact: now.Add(-26 * time.Hour), Started: now.Add(-72 * time.Hour)},
			[]string{"Needs attention (1)", "The head office has not been reached since", "Receipts are accepted and sent as usual",
				"internet connection", url}},
		{"never reached in a day", &Control{URL: url, Started: now.Add(-25 * time.Hour)},
			[]string{"Needs attention (1)", "The head office has not been reached since receiptd started"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := emptyData()
			d.Control = tc.control
			got := attentionText(t, d)
			requireInOrder(t, got, tc.attention)
		})
	}
}

func TestFirstLine(t *testing.T) {
	ok := emptyData()
	require.Equal(t, "Nothing needs attention", FirstLine(ok))

	one := emptyData()
	one.Control = &Control{URL: "wss://hq.example/v1/opamp", Started: now.Add(-time.Hour), RemoteStatus: "FAILED", RemoteMessage: "x"}
	require.Equal(t, "Needs attention: The head office's last configuration was not applied", FirstLine(one))

	two := one
	two.UpstreamUp = false
	two.LastError = "dial tcp 127.0.0.1:7081: connect: connection refused"
	require.Regexp(t, `^2 need attention; first: .*tax service`, FirstLine(two))
}

// TestFirstLineNeedsNoFailures: FirstLine, made without the failed
// entries (the OpAMP health asks every few seconds), says what the page's
// own "Needs attention" says with them.
func TestFirstLineNeedsNoFailures(t *testing.T) {
	d := emptyData()
	d.Counts = map[string]int{"sent": 3, "held": 2, "rejected": 1}
	d.Failures = []Failure{
		{QueueID: "Q000000000001", Kind: "receipt", State: "held", At: now.Add(-time.Hour), Message: "answer lost", Attempts: 1},
		{QueueID: "Q000000000002", Kind: "receipt", State: "held", At: now.Add(-time.Hour), Message: "answer lost", Attempts: 1},
		{QueueID: "Q000000000003", Kind: "receipt", State: "rejected", At: now.Add(-time.Minute), Message: "bad TIN", Attempts: 1},
	}
	page := newView(d).Attention
	require.Len(t, page, 2)
	require.Equal(t, fmt.Sprintf("%d need attention; first: %s", len(page), page[0].Title), FirstLine(d))
}

// Issue 40, item 3: the Head office section shows the channel's state
// from the start when [control] is on (connecting, connected, refused,
// no answer since the last contact), never a ✓ before the server
// answered; a refusal younger than a day is told there, not as a problem.
func TestControlLine(t *testing.T) {
	url := "wss://hq.chain.example/v1/opamp"
	refusal := "the head office refused the connection: Server responded with status=401 Unauthorized"
	for _, tc := range []struct {
		name    string
		control *Control
		want    string // "" : no line
	}{
		{"off", nil, ""},
		{"connecting", &Control{URL: url, Started: now.Add(-3 * time.Second)},
			"… Connecting to the head office's management server (OpAMP, " + url + ") since receiptd started (14:29:57 UTC, 3s ago). No configuration received from it yet"},
		{"connected", &Control{URL: url, Started: now.Add(-time.Hour), Connected: true, LastContact: now.Add(-2 * time.Second), RemoteStatus: "APPLIED"},
			"✓ Connected to the head office's management server (OpAMP, " + url + "); last contact 14:29:58 UTC, 2s ago. Its last configuration is applied."},
		{"refused from the start", &Control{URL: url, Started: now.Add(-time.Minute), LastError: refusal, FailingSince: now.Add(-time.Minute)},
			"✗ Not connected to the head office's management server (OpAMP, " + url + "): failing since 14:29:00 UTC, 1m ago (" + refusal + "); last contact none since receiptd started."},
		{"lost after a contact", &Control{URL: url, Started: now.Add(-time.Hour), LastContact: now.Add(-10 * time.Minute)},
			"✗ Not connected to the head office's management server (OpAMP, " + url + "): no answer since the last contact, 14:20:00 UTC, 10m ago."},
		{"refused config", &Control{URL: url, Started: now.Add(-time.Hour), Connected: true, LastContact: now, RemoteStatus: "FAILED", RemoteMessage: "x"},
			"Its last configuration was not applied: see Needs attention."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := emptyData()
			d.Control = tc.control
			page := render(t, d)
			m := regexp.MustCompile(`(?s)<p class="\w+" id="control">(.*?)</p>`).FindStringSubmatch(page)
			if tc.want == "" {
				require.Nil(t, m)
				return
			}
			require.NotNil(t, m, "the channel's line is on the page")
			require.Contains(t, text(m[1]), tc.want)
			if !tc.control.Connected {
				require.NotContains(t, text(m[1]), "✓")
				require.Contains(t, attentionText(t, d), "Nothing needs attention", "younger than a day, it is no problem")
			}
		})
	}
}
