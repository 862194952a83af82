// Package wal is receiptd's write-ahead log: an append-only log of
// records in preallocated segment files, made durable by group commit (one
// fdatasync for every record appended while the previous one ran), read
// back in order at start-up and trimmed once its records are applied
// elsewhere. It is the one flush on the path of an accepted receipt
// (etcd's WAL in front of its bbolt backend is the model); package queue
// applies the records to the bbolt file in batches off that path.
// The caller of Sync that finds no flush running is the leader: it
// writes and fdatasyncs on its own goroutine, so a lone receipt pays no
// hand-off; it yields to the scheduler first only when other callers are
// about (another record pending, or callers waiting), to let them join.
//
// # Promises
//
//   - Sync(lsn) returns nil only once every record up to lsn is on disk
//     (fdatasync, and fsync of the directory for each new segment's
//     name); a kill -9 or a power cut afterwards cannot lose them.
//   - Open returns every durable record after the given LSN, in order,
//     with no gap: a missing or damaged segment in that range is
//     ErrCorrupt naming the file, never a shorter log. What a cut left
//     half-written after the last durable record (never acknowledged) is
//     ignored: a torn record, or bytes of a recycled segment, never read
//     as a record.
//   - After a failed write or flush the log refuses every later Append
//     and Sync (ErrFailed): what the file holds is no longer known, so
//     the next Open reads it again. Only a new segment that cannot be
//     made for want of space is ErrDiskFull, and the log goes on.
//   - Segments belong to one database: each carries the log's id, and
//     Open refuses a segment of another id.
//
// # Format
//
// A segment is a file named after the LSN of its first record, in hex
// (0000000000000001.wal), preallocated with zeros or recycled from a
// trimmed segment. It begins with a header, then records back to back:
//
//	header: "RDWAL001" | id uint64 | first LSN uint64 | crc32c of the 24 bytes before (uint32) | 4 zero bytes
//	record: payload length uint32 | crc32c of the segment's first LSN, the LSN and the payload (uint32) | LSN uint64 | payload
//
// All integers are big-endian. A record is valid when its length fits,
// its checksum matches and its LSN is the one expected next; the first
// that is not ends the segment. Every start writes a new segment, so
// nothing is ever appended after bytes that were left unread.
package wal
