package main

import (
	"fmt"
	"strings"
	"time"
)

func (r results) rows(o options) []row {
	boltP50 := r.fsync.bolt.p50()
	ref := fmt.Sprintf("bbolt Update p50 %s p99 %s; write+fsync p50 %s", ms(boltP50), ms(r.fsync.bolt.p99()), ms(r.fsync.file.p50()))
	var rows []row
	for i, a := range r.accept {
		x := row{figure: fmt.Sprintf("accept, %d client(s): p50 / p99", a.clients),
			measured: fmt.Sprintf("%s / %s", ms(a.lat.p50()), ms(a.lat.p99()))}
		if i == 0 {
			x.reference, x.target = ref, fmt.Sprintf("p50 <= 2x bbolt (%s)", ms(2*boltP50))
			x.result = verdict(a.lat.p50() <= 2*boltP50)
		}
		rows = append(rows, x)
		if i == 0 {
			rows = append(rows, row{figure: "  storage part: queue.Enqueue, no HTTP: p50 / p99",
				measured:  fmt.Sprintf("%s / %s", ms(r.enqueue.p50()), ms(r.enqueue.p99())),
				reference: fmt.Sprintf("%.1fx bbolt Update p50", float64(r.enqueue.p50())/float64(boltP50))})
		}
	}
	one := r.accept[0].rate
	for _, a := range r.accept {
		x := row{figure: fmt.Sprintf("accept, %d client(s): throughput", a.clients),
			measured:  fmt.Sprintf("%.0f/s (%d receipts)", a.rate, len(a.lat)),
			reference: fmt.Sprintf("%.1fx the 1-client rate", a.rate/one)}
		if a.clients == 64 {
			x.target, x.result = ">= 10x 1-client", verdict(a.rate >= 10*one)
		}
		rows = append(rows, x)
	}
	for _, d := range r.drain {
		rows = append(rows, row{figure: fmt.Sprintf("drain, sync.concurrency %d, %s latency", d.conc, o.latency),
			measured:  fmt.Sprintf("%.1f/s (%d receipts)", d.drain, d.n),
			reference: fmt.Sprintf("sim capacity %.1f/s at %d clients (%.0f%%)", d.capacity, d.conc, 100*d.drain/d.capacity),
			target:    ">= 90% of capacity", result: verdict(d.drain >= 0.9*d.capacity)})
	}
	rows = append(rows, row{figure: "cached lookup getBranchInfo: p50 / p99",
		measured:  fmt.Sprintf("%s / %s", ms(r.lookup.lookup.p50()), ms(r.lookup.lookup.p99())),
		reference: fmt.Sprintf("GET /healthz p50 %s p99 %s", ms(r.lookup.healthz.p50()), ms(r.lookup.healthz.p99())),
		target:    "p99 < 1ms", result: verdict(r.lookup.lookup.p99() < time.Millisecond)})
	rows = append(rows, row{figure: fmt.Sprintf("RSS with a %d-receipt backlog", r.backlog.entries),
		measured: mib(r.backlog.rss), reference: "empty database: " + mib(r.empty.rss),
		target: "<= 60 MiB", result: verdict(r.backlog.rss <= 60<<20)})
	rows = append(rows, row{figure: fmt.Sprintf("start to /readyz with a %d-receipt backlog", r.backlog.entries),
		measured: ms(r.backlog.ready), reference: "empty database: " + ms(r.empty.ready),
		target: "<= 1s", result: verdict(r.backlog.ready <= time.Second)})
	return rows
}

func (r results) notes(o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "How each figure was measured:\n")
	fmt.Fprintf(&b, "- accept: POST /rest/receipt with \"Prefer: wait=0\", a unique Idempotency-Key each, keep-alive connections,\n")
	fmt.Fprintf(&b, "  the upstream simulator DOWN (every answer a durable 202); %s per level after a warm-up; one daemon for all levels.\n", o.acceptFor)
	fmt.Fprintf(&b, "- raw fsync reference: %d bbolt Updates of one 32-byte value, and %d 32-byte os.File writes each followed by Sync,\n", o.fsyncN, o.fsyncN)
	fmt.Fprintf(&b, "  in the scratch directory that holds the daemon's data; queue.Enqueue: %d sequential enqueues of the same\n", o.fsyncN)
	fmt.Fprintf(&b, "  receipt body straight into a new database there (no HTTP, no daemon).\n")
	fmt.Fprintf(&b, "- drain: a backlog of %s of capacity written with internal/queue before start; rate = receipts issued by the\n", o.drainFor)
	fmt.Fprintf(&b, "  simulator per second (its own timestamps, first to last); capacity = the same rate for a plain client loop\n")
	fmt.Fprintf(&b, "  of as many goroutines straight to the simulator for %s.\n", o.drainFor)
	fmt.Fprintf(&b, "- cached lookup: %d sequential keep-alive GETs after warm-up, all X-Cache: HIT.\n", o.lookups)
	fmt.Fprintf(&b, "- RSS: peak VmRSS over %s after /readyz, upstream unreachable so the backlog stays; backlog written in %s,\n", o.settle, r.backlog.written.Round(time.Millisecond))
	fmt.Fprintf(&b, "  database file %s. Time to ready: from exec to the first 200 from /readyz (polled every 2 ms).", mib(r.backlog.dbSize))
	return b.String()
}
