package queue_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
)

// benchBody is a typical receipt request (~600 bytes).
var benchBody = []byte(`{"totalAmount":11000.00,"totalVAT":1000.00,"totalCityTax":0,"districtCode":"0102",` +
	`"merchantTin":"37900846788","branchNo":"001","posNo":"0001","type":"B2C_RECEIPT","billIdSuffix":"000001",` +
	`"receipts":[{"totalAmount":11000.00,"taxType":"VAT_ABLE","merchantTin":"37900846788","totalVAT":1000.00,` +
	`"items":[{"name":"Coffee","barCode":"6901234567892","barCodeType":"GS1","classificationCode":"2349010",` +
	`"measureUnit":"pcs","qty":2,"unitPrice":5500.00,"totalVAT":1000.00,"totalCityTax":0,"totalAmount":11000.00}]}],` +
	`"payments":[{"code":"CASH","status":"PAID","paidAmount":11000.00}]}`)

var writerCounts = []int{1, 8, 64}

// runWriters runs total operations spread over w goroutines and reports
// latency percentiles.
func runWriters(b *testing.B, w int, op func(i int64) error) {
	var next atomic.Int64
	lat := make([][]time.Duration, w)
	var wg sync.WaitGroup
	errs := make(chan error, w)
	b.ResetTimer()
	for g := range w {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				start := time.Now()
				if err := op(i); err != nil {
					errs <- err
					return
				}
				lat[g] = append(lat[g], time.Since(start))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}

// openBenchQueue opens a new store and queue in dir, closed when b ends:
// with its write-ahead log, as the daemon runs it, unless
// RECEIPTD_QUEUE_NOLOG=1 (withLog).
func openBenchQueue(b *testing.B, dir string) (*queue.Queue, *store.Store) {
	path := filepath.Join(dir, "receiptd.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	var opts queue.Options
	if withLog {
		opts.LogDir = path + ".wal"
	}
	q, err := queue.Open(ctx, st, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = q.Close(ctx) }) // runs before the store's Close
	return q, st
}

// BenchmarkEnqueue measures durable enqueues (one flush of the log per
// group; without the log one fsynced commit per group) at 1, 8 and 64
// concurrent writers. Compare with BenchmarkRawUpdate. Without the log it
// reports items/commit, the mean group.
func BenchmarkEnqueue(b *testing.B) {
	for _, w := range writerCounts {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) {
			q, st := openBenchQueue(b, b.TempDir())
			before := st.Stats()
			runWriters(b, w, func(i int64) error {
				key := fmt.Sprint("k", i)
				_, _, err := q.Enqueue(ctx, queue.NewReceipt{IdemKey: key, BodyHash: key, Body: benchBody})
				return err
			})
			if after := st.Stats(); !withLog { // with the log, the database commits only when it applies
				b.ReportMetric(float64(after.Updates-before.Updates)/float64(max(1, after.Commits-before.Commits)), "items/commit")
			}
		})
	}
}

// BenchmarkRawUpdate is the baseline: one plain bbolt db.Update per item,
// same body, same temp directory (same disk), default bbolt options.
func BenchmarkRawUpdate(b *testing.B) {
	for _, w := range writerCounts {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) {
			db, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			runWriters(b, w, func(int64) error { return rawUpdate(db) })
		})
	}
}

// BenchmarkEnqueueVsRawUpdate is the 1-writer target measured fairly: one
// writer makes durable enqueues and raw bbolt Updates (default options, one
// nested bucket, same body) on two files in the same directory, in
// alternating blocks of 100, so both see the same disk through the same
// minutes (run one after the other, the raw reference alone moves by a
// quarter) and neither waits often on the other's writeback. It reports
// both medians and their ratio (target ≤ 1.3). One op is one Enqueue or
// one Update.
func BenchmarkEnqueueVsRawUpdate(b *testing.B) {
	dir := b.TempDir()
	q, _ := openBenchQueue(b, dir)
	db, err := bbolt.Open(filepath.Join(dir, "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	enqueue := func(i int) error {
		key := fmt.Sprint("k", i)
		_, _, err := q.Enqueue(ctx, queue.NewReceipt{IdemKey: key, BodyHash: key, Body: benchBody})
		return err
	}
	raw := func(int) error { return rawUpdate(db) }
	const blockLen = 100
	var lat [2][]time.Duration
	i := 0
	for b.Loop() {
		which := (i / blockLen) % 2
		op := [2]func(int) error{enqueue, raw}[which]
		start := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		lat[which] = append(lat[which], time.Since(start))
		i++
	}
	if len(lat[1]) == 0 {
		return // too few iterations to reach a raw block: nothing to compare
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	e, r := p50(lat[0]), p50(lat[1])
	b.ReportMetric(e, "enqueue-p50-µs")
	b.ReportMetric(r, "raw-p50-µs")
	b.ReportMetric(e/r, "ratio")
}

func rawUpdate(db *bbolt.DB) error {
	return db.Update(func(tx *bbolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte("raw"))
		if err != nil {
			return err
		}
		seq, _ := bk.NextSequence()
		return bk.Put(fmt.Appendf(nil, "%016d", seq), benchBody)
	})
}

// BenchmarkOpenBacklog100k builds a 100k-entry backlog once, then measures
// opening it (store.Open with and without the full check, plus queue.Open)
// and the Go heap and process RSS right after open. The backlog is all in
// the unindexed tail, as a long outage leaves it; first-claim-ms is the
// first Claim after open, which indexes a slice of 1,000 of it (each
// iteration's claim indexes the next slice).
func BenchmarkOpenBacklog100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "receiptd.db")
	buildBacklog(b, path, 100_000)
	fi, _ := os.Stat(path)
	b.Logf("100k-entry backlog: file %.1f MiB", float64(fi.Size())/(1<<20))
	for _, skip := range []bool{false, true} {
		b.Run(fmt.Sprintf("skipcheck=%v", skip), func(b *testing.B) {
			var heap, rss uint64
			var claim time.Duration
			for b.Loop() {
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				st, err := store.Open(path, store.Options{SkipCheckOnOpen: skip})
				if err != nil {
					b.Fatal(err)
				}
				q, err := queue.Open(ctx, st, queue.Options{})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				heap, rss = m1.HeapAlloc-min(m0.HeapAlloc, m1.HeapAlloc), rssKiB()
				b.StopTimer()
				start := time.Now()
				if got, err := q.Claim(ctx, 1, time.Now()); err != nil || len(got) != 1 {
					b.Fatalf("first claim: %d entries, %v", len(got), err)
				}
				claim = time.Since(start)
				b.StartTimer()
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(heap)/1024, "heap-KiB-after-open")
			b.ReportMetric(float64(rss)/1024, "rss-MiB")
			b.ReportMetric(float64(claim.Microseconds())/1000, "first-claim-ms")
		})
	}
}

func buildBacklog(b *testing.B, path string, n int) {
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	q, err := queue.Open(ctx, st, queue.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				key := fmt.Sprint("k", i)
				if _, _, err := q.Enqueue(ctx, queue.NewReceipt{IdemKey: key, BodyHash: key, Body: benchBody}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
}

// rssKiB reads the resident set size on Linux; elsewhere it reports 0.
func rssKiB() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kib uint64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kib)
			return kib
		}
	}
	return 0
}

// BenchmarkApplyOnlineSales measures applying the log's records of online
// sales to the file: each op logs 2,048 sales (each its receipt in
// sending, then its outcome, sent; not timed) and then times ApplyAll,
// which writes them in one commit of 4,096 records, fdatasyncs included
// (applyFolded writes each sale's two records as one entry). The
// idempotency keys are spread over the key space, as a till's are.
//
//	go test -run '^$' -bench ApplyOnlineSales -benchtime 6x ./internal/queue
func BenchmarkApplyOnlineSales(b *testing.B) {
	const sales = 2048
	q, st := openLogged(b, filepath.Join(b.TempDir(), "receiptd.db"), 0)
	k := 0
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		for range sales {
			k++
			r := queue.NewReceipt{IdemKey: fmt.Sprintf("k-%032d", k*7919%1000003), BodyHash: fmt.Sprintf("%064x", k), Body: benchBody,
				Sending: true, MerchantTin: "37900846788", PosNo: "1", BillIDSuffix: fmt.Sprint(k), Now: t0.Add(time.Duration(k) * time.Second)}
			e, _, err := q.Enqueue(ctx, r)
			if err != nil {
				b.Fatal(err)
			}
			f := queue.Finishing{QueueID: e.QueueID, Awaited: true, Next: queue.StateSent,
				Outcome: &queue.Outcome{Status: "SUCCESS", ID: fmt.Sprintf("%033d", k)},
				Attempt: queue.Attempt{At: t0, Duration: time.Millisecond, Result: queue.ResultSuccess}}
			if _, err := q.Finish(ctx, f); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		if err := q.ApplyAll(ctx); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
	}
	b.ReportMetric(float64(took.Microseconds())/float64(b.N*sales), "µs/sale")
	if err := q.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
}
