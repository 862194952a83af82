// Package salvage reads what it still can out of a damaged receiptd
// database (a bbolt file) and the write-ahead log beside it, for
// `receiptd salvage`, which writes what it returns into a new database.
// It reads bbolt's pages itself (page.go describes the format) instead of
// opening the file with bbolt, which trusts every page it is pointed at
// and panics, or reads nonsense, where one is damaged.
//
// # Promises
//
//   - It never writes: the damaged file and the log are only read.
//   - Every entry it returns decoded completely as a queue record
//     (queue.DecodeRecord), under the key its own queueId names, with a
//     kind, state and fields that make sense together (valid). A record
//     that does not is counted in Report.Undecodable, never repaired or
//     guessed.
//   - The tree comes first: the newer of the two meta pages whose
//     checksums hold gives the root, and every page reached from it that
//     decodes, sits where its parent says and holds keys in the range its
//     parent gives it is trusted as the current state. Where a page of the
//     entries bucket's tree cannot be read, its key range is lost from the
//     tree, and only then is every other page of the file scanned for leaf
//     pages holding entries of that range: pages cut off from the tree by
//     the damage, and pages bbolt freed (older copies, copy-on-write).
//     Records from outside the tree are never used for a queueId the tree
//     still holds, so a freed, older copy cannot replace the current one.
//   - Among several copies of one entry from outside the tree, the newest
//     (UpdatedAt, then the longer attempt history) wins, then one whose
//     body matches its hash, then one on a page not in bbolt's freelist,
//     then a page's over the write-ahead log's.
//   - Log records (Log) are only new queued receipts; they add entries
//     the file does not hold, never replace one it does.
//
// What it cannot promise: an entry whose every copy is on damaged pages is
// lost (counted by what can be counted: the idempotency rows that point at
// it, the gap in the queueIds); a copy from a freed page may be older than
// the entry's last state (a receipt sent again by an operator shows its
// earlier outcome). `receiptd salvage` holds every unfinished entry, so
// neither can make receiptd send a receipt without an operator's check.
package salvage
