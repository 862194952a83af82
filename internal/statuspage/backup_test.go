package statuspage

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackupOnThePage(t *testing.T) {
	failing := &Backup{Dir: "/mnt/usb/receiptd", LastSuccess: now.Add(-2 * time.Hour),
		LastFile:    "/mnt/usb/receiptd/receiptd-20261126T081500Z.db",
		LastError:   "snapshot: create /mnt/usb/receiptd: mkdir /mnt/usb/receiptd: not a directory",
		LastErrorAt: now.Add(-time.Minute)}
	cases := []struct {
		name      string
		backup    *Backup
		attention []string // in the first section, in order
		section   string   // in the Snapshots section
	}{
		// Issue 40, item 3: off is a choice, told as a note, not a
		// warning outside Needs attention.
		{"off", nil, []string{"✓ Nothing needs attention"}, "Snapshots – Snapshots are off ([backup] dir is not set): receipts not yet sent are kept on this disk only"},
		{"working", &Backup{Dir: "/mnt/usb/receiptd", LastSuccess: now.Add(-10 * time.Minute),
			LastFile: "/mnt/usb/receiptd/receiptd-20261126T100500Z.db"},
			[]string{"✓ Nothing needs attention"}, "Last snapshot 14:20:00 UTC, 10m ago, written and checked"},
		{"failing", failing, []string{"Needs attention (1)", "The last snapshot failed", "/mnt/usb/receiptd",
			"The newest good snapshot is", "receiptd backup FILE"}, "The last snapshot failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := emptyData()
			d.Backup = tc.backup
			got := attentionText(t, d)
			requireInOrder(t, got, tc.attention)
			page := text(render(t, d))
			i := strings.Index(page, "Snapshots ")
			require.GreaterOrEqual(t, i, 0, page)
			require.Contains(t, page[i:], tc.section)
		})
	}
}
