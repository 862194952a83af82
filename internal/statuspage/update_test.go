package statuspage

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// updateLine is the Updates section's line as a person reads it, with
// its class; "" when the page has no Updates section.
func updateLine(t *testing.T, d Data) string {
	t.Helper()
	page := render(t, d)
	m := regexp.MustCompile(`(?s)<p class="(\w+)" id="update">(.*?)</p>`).FindStringSubmatch(page)
	if m == nil {
		require.NotContains(t, page, `id="h-update"`)
		return ""
	}
	return m[1] + ": " + text(m[2])
}

// TestUpdateOnThePage (issue 39, item 9): a release rolled back or an
// offer refused is a card in Needs attention, with the reason, the
// version that runs and since when; a release on probation is told in
// the Updates section, never with a ✓ (only an installed release has
// one); a till that never took an update shows no Updates section.
func TestUpdateOnThePage(t *testing.T) {
	since := now.Add(-10 * time.Minute)
	for _, tc := range []struct {
		name      string
		update    *Update
		line      string   // "": no Updates section
		attention []string // in the first section, in order
	}{
		{"never offered", nil, "", []string{"✓ Nothing needs attention"}},
		{"idle", &Update{State: "idle", Answering: "1.0.0"}, "", []string{"✓ Nothing needs attention"}},
		{"staged", &Update{State: "staged", Offered: "1.1.0", Since: since, Message: "1.1.0 verified; waiting for the switch", Answering: "1.0.0"},
			"empty: … receiptd 1.1.0 is verified and waits for the switch, between sales and inside update.window (since 14:20:00 UTC, 10m ago). This till runs receiptd 1.0.0.",
			[]string{"✓ Nothing needs attention"}},
		{"on probation", &Update{State: "probation", Offered: "1.1.0", Since: since, Message: "1.1.0 is ready; on probation for 10m0s", Answering: "1.1.0"},
			"empty: … receiptd 1.1.0 is on probation (since 14:20:00 UTC, 10m ago): 1.1.0 is ready; on probation for 10m0s. If it stops or fails, the version the package manager installed serves again by itself.",
			[]string{"✓ Nothing needs attention"}},
		{"installed", &Update{State: "installed", Running: "1.1.0", Offered: "1.1.0", Since: since, Answering: "1.1.0"},
			"allgood: ✓ receiptd 1.1.0 is installed (since 14:20:00 UTC, 10m ago), after its probation; the version before was the version the package manager installed.",
			[]string{"✓ Nothing needs attention"}},
		{"rolled back", &Update{State: "rolled_back", Offered: "1.2.0", Running: "1.1.0", Since: since, Answering: "1.1.0",
			Message: "rolled back: it stopped during its probation: exit status 3"},
			"empty: ✗ receiptd 1.2.0 was rolled back (since 14:20:00 UTC, 10m ago): rolled back: it stopped during its probation: exit status 3. This till runs receiptd 1.1.0.",
			[]string{"Needs attention (1)", "⚠ receiptd 1.2.0 was rolled back: this till runs receiptd 1.1.0 again",
				"receipts are accepted and sent as before", "Cause: rolled back: it stopped during its probation: exit status 3 (14:20:00 UTC, 10m ago)",
				"Tell the head office", "receiptd update status"}},
		{"rolled back 8 days ago", &Update{State: "rolled_back", Offered: "1.2.0", Since: now.Add(-8 * 24 * time.Hour), Answering: "1.0.0",
			Message: "rolled back: not ready within control.rollback_after (1m0s)"},
			"empty: ✗ receiptd 1.2.0 was rolled back", []string{"✓ Nothing needs attention"}},
		{"refused", &Update{State: "refused", Since: since, Answering: "1.0.0",
			Message: "refused (key): the signature's key is not in update.trusted_keys"},
			"empty: ✗ The last release offered was refused (since 14:20:00 UTC, 10m ago): refused (key): the signature's key is not in update.trusted_keys. This till runs receiptd 1.0.0.",
			[]string{"Needs attention (1)", "⚠ A release offered to this till was refused", "Nothing changed: this till runs receiptd 1.0.0",
				"Cause: refused (key): the signature's key is not in update.trusted_keys", "receiptd update status"}},
		{"unreadable", &Update{State: "unknown", Answering: "1.0.0", Message: "read the update's state /var/lib/receiptd/update.json: unexpected end of JSON input"},
			"empty: ✗ The update's state cannot be read: read the update's state /var/lib/receiptd/update.json: unexpected end of JSON input.",
			[]string{"Needs attention (1)", "The update's state (update.json) cannot be read", "Move update.json aside"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := emptyData()
			d.Update = tc.update
			line := updateLine(t, d)
			if tc.line == "" {
				require.Empty(t, line)
			} else {
				require.Contains(t, line, tc.line)
			}
			if tc.name != "installed" {
				require.NotContains(t, line, "✓", "only an installed release is a ✓")
			}
			requireInOrder(t, attentionText(t, d), tc.attention)
			wantAlert := AlertNone
			if len(tc.attention) > 1 {
				wantAlert = AlertWarn
			}
			require.Equal(t, wantAlert, Alert(d), "alert follows the card")
		})
	}
}
