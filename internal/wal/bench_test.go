package wal_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/receiptd/receiptd/internal/wal"
)

// BenchmarkAppendSync measures Append and Sync of a 1,500-byte record
// (about a receipt's) from 1 and 64 writers, each waiting for its record
// to be durable before the next, as the API's requests do; B/op shows
// what a record costs the collector besides its own copy in the batch:
//
//	go test -run '^$' -bench AppendSync -benchmem ./internal/wal
func BenchmarkAppendSync(b *testing.B) {
	rec := make([]byte, 1500)
	for i := range rec {
		rec[i] = byte('a' + i%26)
	}
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			l, _, err := wal.Open(b.TempDir(), id, 0, wal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ReportAllocs()
			b.ResetTimer()
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						lsn, err := l.Append(rec)
						if err == nil {
							err = l.Sync(ctx, lsn)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
