package queue

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// Every key added is reported; of keys never added, about as few as the
// filter's size promises.
func TestKeyFilterHasEveryKeyAdded(t *testing.T) {
	t.Parallel()
	const n = 200_000 // more than filterMinBits holds at filterBitsPerKey
	k := newKeyFilter(n, maphash.MakeSeed())
	for i := range n {
		k.add(fmt.Sprintf("key:bench-r01-%07d", i))
	}
	for i := range n {
		if key := fmt.Sprintf("key:bench-r01-%07d", i); !k.mayHave(key) {
			t.Fatalf("%s was added but is missing", key)
		}
	}
	wrong := 0
	for i := range n {
		if k.mayHave(fmt.Sprintf("auto:\"123\"/\"1\"/\"%d\"/2026-11-29", i)) {
			wrong++
		}
	}
	if rate := float64(wrong) / n; rate > 0.01 {
		t.Errorf("%.2f%% of keys never added were reported (%d of %d); 16 bits a key should give about 0.25%%", 100*rate, wrong, n)
	}
}

// The smallest filter, with many times the keys it is sized for, still
// never misses one.
func TestKeyFilterOverfullMissesNoKey(t *testing.T) {
	t.Parallel()
	k := newKeyFilter(0, maphash.MakeSeed())
	if got := uint64(len(k.words)) * 64; got != filterMinBits {
		t.Fatalf("an empty file's filter has %d bits, want %d", got, filterMinBits)
	}
	for i := range 1_000_000 {
		k.add(fmt.Sprint(i))
	}
	for i := range 1_000_000 {
		if !k.mayHave(fmt.Sprint(i)) {
			t.Fatalf("%d was added but is missing", i)
		}
	}
}
