package queue_test

import (
	"fmt"
	"math"
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

// FormatID writes what fmt.Sprintf("Q%012d") writes, at every number of
// digits up to the largest seq.
func TestFormatIDIsSprintf(t *testing.T) {
	t.Parallel()
	seqs := []uint64{0, 1, 9, 10, 999_999_999_999, 1_000_000_000_000, 12_345_678_901_234, math.MaxUint64}
	for p := uint64(1); p < math.MaxUint64/10; p *= 10 {
		seqs = append(seqs, p-1, p, p+1, 7*p)
	}
	for _, seq := range seqs {
		if got, want := queue.FormatID(seq), fmt.Sprintf("Q%012d", seq); got != want {
			t.Fatalf("FormatID(%d) = %q, want %q", seq, got, want)
		}
	}
}
