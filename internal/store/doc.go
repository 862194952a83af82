// Package store owns receiptd's bbolt file: opening and locking it, the
// schema version and its migrations, group commit, online backup and the
// consistency check.
//
// # Promises
//
//   - Update returns nil only once the change is fsynced; a kill -9 or a
//     power cut afterwards cannot lose it, and a change that did not commit is
//     never visible (bbolt writes data pages, fsyncs, then flips one of two
//     checksummed meta pages).
//   - A second process on the same file gets ErrLocked naming the file within
//     Options.LockTimeout; it never hangs.
//   - A damaged or unreadable file is ErrCorrupt naming the file; one
//     written by a newer receiptd is ErrNewerSchema, naming the release to
//     install (schema.go). Either file is left untouched, and never
//     replaced by a new empty database.
//   - OpenDir keeps a marker beside the file (layout.MarkerFile) naming the
//     database's random id: a data directory that held a database refuses a
//     missing, empty (ErrMissing), truncated (ErrCorrupt) or replaced
//     (ErrReplaced) file instead of starting an empty queue. A file moved,
//     deleted or replaced while open is ErrMoved for every later Update once
//     CheckIdentity sees it. New names (the file, the marker) are made
//     durable by fsyncing the directory.
//   - A commit that fails because the disk or file cannot grow is ErrDiskFull;
//     the database stays consistent and writes work again when space returns.
//
// # bbolt options, and why
//
// Freelist type: array (bbolt's default). The hashmap freelist only pays off
// for multi-gigabyte files with heavy fragmentation (etcd-io/etcd#11258,
// "only few GB won't see noticeable differences"), and it does not reuse the
// lowest free page, which etcd operators saw as steady file growth
// (gardener/etcd-druid#1373). A receipt queue pruned to 90 days stays in the
// tens of megabytes, where array is fast and keeps the file compact.
//
// NoFreelistSync: false (the freelist is written with every commit). With
// NoFreelistSync bbolt must rebuild the freelist by scanning the whole file on
// every open (open-telemetry/opentelemetry-collector-contrib#9003 measured
// 2 ms → 200 ms for 2 GB) and on every rolled-back write transaction
// (etcd-io/bbolt#152, #153: "nosync option makes rollback very expensive",
// with past panics in that path, #183). A failed commit on a full disk is an
// expected event here, so rollback must stay cheap and well-trodden. The cost,
// one extra page per commit, is shared by every caller of a group commit.
//
// InitialMmapSize: Options.InitialMmapSize, 64 MiB by default. A write that
// outgrows the mapping must remap, which waits for every open read
// transaction; a mapping larger than the file means readers (status page,
// listing, backup) never stall writers. On Windows bbolt resizes the file to
// this size at open (etcd-io/bbolt#378), so it is kept modest.
//
// NoGrowSync: false, so a grown file size is fsynced before data is written
// into it (boltdb/bolt#284). NoSync is never set in a real build: only the
// build tag receiptd_nosync_unsafe sets it (UnsafeNoSync), for the power-cut
// test's negative control.
//
// # After a failed commit
//
// bbolt writes data pages first and the meta page last, and rolls the
// in-memory freelist back when a commit fails. When the failure is "cannot
// grow" (ENOSPC, EFBIG, EDQUOT), it happens before the meta page is touched:
// the old meta page still describes a complete tree, so the store reports
// ErrDiskFull and carries on. Any other commit failure (an I/O error, a failed
// fsync) may leave the page cache and the file disagreeing (etcd-io/bbolt#233:
// rollback cannot repair a half-written commit), so the Store refuses every
// later write with ErrFailed; reopening re-reads the last durable meta page.
package store
