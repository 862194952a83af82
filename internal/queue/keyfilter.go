package queue

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"go.etcd.io/bbolt"
)

// keyFilter is a Bloom filter of the idempotency keys the database file
// holds: Open adds every key of the file, and putIdem every key it writes,
// before its commit. A key it has never been given is absent from the
// file, so an enqueue with the log looks a new key up without a read
// transaction (lookupKey): that read was about 3% of the daemon's CPU
// for a receipt at 64 clients (docs/performance.md). A key that is
// present, or a false positive, is read from the file as before. Keys
// whose rows retention removes stay in it until the next Open: a false
// positive more, never a missed key. Open reads every key of the file
// once to fill it: 2 ms to 20 ms for a file of 100,000 receipts (go test
// -run '^$' -bench OpenBacklog100k ./internal/queue, skipcheck=true).
type keyFilter struct {
	seed  maphash.Seed
	words []atomic.Uint64
	mask  uint64 // the number of bits, less one (a power of two)
}

const (
	// filterBitsPerKey is the filter's size for the keys the file holds
	// at Open: with 4 probes, about 1 false positive in 400. Keys added
	// after Open use the same bits: at four times Open's keys, about 1 in
	// 6 new keys is still read from the file.
	filterBitsPerKey = 16
	// filterMinBits is the least size: 256 KiB, room for 131,072 keys at
	// filterBitsPerKey (months of a busy till's sales).
	filterMinBits = 1 << 21
	filterProbes  = 4
)

// newKeyFilter returns an empty filter sized for n keys, hashing with seed.
func newKeyFilter(n int, seed maphash.Seed) *keyFilter {
	want := max(uint64(n)*filterBitsPerKey, filterMinBits)
	size := uint64(1) << bits.Len64(want-1) // the next power of two
	return &keyFilter{seed: seed, words: make([]atomic.Uint64, size/64), mask: size - 1}
}

// probes calls f with the bit numbers of a key whose hash is h, while f
// returns true, and reports whether every call did.
func (k *keyFilter) probes(h uint64, f func(bit uint64) bool) bool {
	step := h>>33 | 1 // odd: the probes differ
	for i := range uint64(filterProbes) {
		if !f((h + i*step) & k.mask) {
			return false
		}
	}
	return true
}

// add notes key. Safe beside mayHave and other adds.
func (k *keyFilter) add(key string) { k.set(maphash.String(k.seed, key)) }

// set notes the key whose hash is h.
func (k *keyFilter) set(h uint64) {
	k.probes(h, func(bit uint64) bool {
		k.words[bit/64].Or(1 << (bit % 64))
		return true
	})
}

// mayHave reports false only for a key never added.
func (k *keyFilter) mayHave(key string) bool {
	return k.probes(maphash.String(k.seed, key), func(bit uint64) bool {
		return k.words[bit/64].Load()&(1<<(bit%64)) != 0
	})
}

// filterOf returns a filter holding every key of the idempotency bucket,
// in one pass over it: the keys are hashed (as bytes: maphash hashes a
// string and its bytes alike) before the filter is sized for their
// number, 8 bytes a key for the moment.
func filterOf(idem *bbolt.Bucket) *keyFilter {
	seed := maphash.MakeSeed()
	var hashes []uint64
	_ = idem.ForEach(func(key, _ []byte) error {
		hashes = append(hashes, maphash.Bytes(seed, key))
		return nil
	})
	k := newKeyFilter(len(hashes), seed)
	for _, h := range hashes {
		k.set(h)
	}
	return k
}
