package queue_test

import (
	"testing"

	"github.com/receiptd/receiptd/internal/queue"
)

// FuzzParseID: ids come from URLs and DELETE bodies. Whatever parses must
// format back to the same text, so one entry has exactly one queueId.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"Q000000000001", "Q999999999999", "Q000000000000", "Q+00000000001", "q000000000001", "", "Q-1", "123456789012345678901234567890123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seq, ok := queue.ParseID(s)
		if !ok {
			return
		}
		if seq == 0 || queue.FormatID(seq) != s {
			t.Fatalf("ParseID(%q) = %d, formats back as %q", s, seq, queue.FormatID(seq))
		}
	})
}
