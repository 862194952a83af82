// Package fleet pushes receiptd's own metrics to a head office with the
// Prometheus remote-write protocol 1.0, and keeps what the head office has
// not accepted on disk until it does (store and forward).
//
// # What it promises
//
//   - Every Interval, every receiptd_ series of the registry it is given is
//     sampled (histograms and summaries as their _bucket/_sum/_count
//     series, exactly as a scrape of /metrics would see them), with the
//     fleet labels and instance added, and appended to the buffer as one
//     record, fsynced. A kill -9 or a power cut loses at most the interval
//     being written: a torn record fails its checksum and is cut off when
//     the buffer is reopened.
//   - Records are sent oldest first, several intervals to a request, as a
//     snappy-compressed protobuf WriteRequest (POST, Content-Encoding:
//     snappy, Content-Type: application/x-protobuf,
//     X-Prometheus-Remote-Write-Version: 0.1.0). 2xx: accepted and
//     forgotten. 5xx, 429 and connection errors: the same records again
//     after an exponential backoff (cenkalti/backoff/v4), capped at
//     max(Interval, 5s) and 5 minutes. Any other 4xx: that request's
//     records are dropped and counted, and the refusal logged once (until
//     a send succeeds again).
//   - The buffer stays under BufferBytes on disk and Buffer in age; the
//     oldest records go first, and every unsent sample dropped is counted
//     (Status.Dropped, receiptd_fleet_dropped_samples_total).
//   - It shares nothing with accepting a receipt: its own files (never
//     the database), its own goroutines, its own http.Client; memory is
//     bounded by one interval's samples plus one request (maxRequest).
//     A dead head office, a full buffer or a failed disk write never
//     reaches a sale: the push logs and carries on.
//   - Nothing secret or personal is in it: only the receiptd_ series,
//     whose labels are fixed sets (kind, outcome, route, state ...), and
//     the labels configured here. Header values (tokens) are never logged.
//
// # The buffer on disk
//
// A directory (the daemon uses <data_dir>/fleet) of segment files named
// by a 16-digit hexadecimal sequence number plus ".seg", appended to in
// turn, each a run of records (record.go: length, CRC-32C, sample time,
// sample count, payload), and a file "sent" holding the position of the
// first record not yet accepted ("<segment hex> <offset>"). A segment
// whose records are all accepted is deleted. The payload of a record is
// the interval's WriteRequest, snappy-compressed; a request decompresses
// and joins several (repeated protobuf fields concatenate) and compresses
// the whole again.
package fleet
