// Package queue owns receiptd's durable receipt queue: entries and their
// states, FIFO order, the idempotency index, per-entry attempt history,
// outcomes, counts by state, ageing, paged listing and retention pruning.
//
// # Promises
//
//   - Every change (enqueue, claim, finish, retry, delete, prune) is one
//     transaction of package store, or with a log one record of it (an
//     enqueue, a finish): atomic, and durable (fsynced) before the method
//     returns nil. Concurrent callers share commits (group commit).
//   - Every state change goes through one table of legal transitions
//     (transitions in layout.go); anything else is ErrIllegalTransition.
//   - An idempotency key maps to its first entry for as long as the entry is
//     kept; same key and body hash replays it, another hash is ErrConflict.
//   - The lottery number and QR data are never stored: Outcome has no field
//     for them, and Body is the POS's request, which carries neither.
//   - Open, Claim, Counts and OldestUnsent never scan the history: indexes by
//     state, a pending index of claimable work and per-state counters are
//     kept in the same transactions as the entries, except for the newest
//     queued receipts, whose rows the next claim or delete writes (the
//     unindexed tail, layout.go).
//
// # Deletes
//
// RequestDelete resolves its id as a queueId, else as an upstream receipt
// id (through an index filled when a create succeeds), else as an id
// receiptd has never seen. What it does, by the state of a known receipt:
//
//	queued, never attempted      → cancelled locally, never sent (DeleteCancelled)
//	rejected                     → cancelled: it never reached the tax service (DeleteCancelled)
//	queued after an ambiguous
//	attempt, sending, held       → a delete entry that waits for the receipt to finish (DeleteQueued)
//	sent, payment                → a delete entry for the outcome's id; date defaults to its date (DeleteQueued)
//	cancelled, or a delete for it
//	already queued or done       → the existing entry, nothing new (DeleteExisting)
//
// An unknown id gets a delete entry for that id; an unknown id in the form
// of a queueId is ErrNotFound (upstream ids are 33 digits). A queued receipt whose
// earlier attempt was ambiguous may already exist upstream, so it is not
// cancelled silently: it is sent, then deleted. A waiting delete whose
// receipt ends rejected or cancelled finishes as delete_rejected, never sent.
// A delete that ended delete_rejected can be replaced by a new request.
//
// # Unsent
//
// OldestUnsent counts work not yet accepted upstream: receipts queued,
// sending or held (an ambiguous entry may not have arrived), and deletes
// waiting to be sent (delete_queued, or sending).
//
// # The write-ahead log
//
// With Options.LogDir, an enqueue of a new receipt is one record in the
// write-ahead log (package wal): durable with one fdatasync, shared by
// every enqueue of the same moment, and the bbolt file is not written on
// the POS's path. So is an attempt's outcome (FinishAndClaim: the entry
// as the attempt left it), and a new receipt may be logged already in
// sending (NewReceipt.Sending: its accept carries the claim). Open
// applies the log before it recovers what is left in sending. The records are applied to the bbolt file later, in
// batches: by ApplyLoop (once the till is quiet, or applySoon records
// wait), and at the start of every other write
// transaction of the queue (a claim, a finish, a delete request), so every
// transaction sees every durable receipt. Applying a record writes what
// Enqueue wrote without a log: the entry (in the unindexed tail) and its
// idempotency row, and moves the applied mark (keyLogApplied) in the same
// transaction; so replaying a record twice is impossible, and Open
// replays exactly the records after the mark. Once applied and committed,
// a record leaves memory, and its segment is trimmed.
//
// Until then the record is in the overlay, which every read consults
// (view): idempotency (a replay of a receipt not yet applied), Get, List,
// Latest, Counts, OldestUnsent and ClaimableAhead; a backup applies
// everything first (ApplyAll). A record leaves the overlay only after the
// commit that applied it, so a reader that looks at the overlay first and
// at the database second cannot miss it.
//
// queueIds stay one sequence: Enqueue takes the next one under walMu,
// and whatever takes a queueId inside a bbolt transaction (a delete
// request, a corrected receipt) runs exclusive: under walMu, with every
// record durable and applied first, so the sequence in the file is the
// one in memory.
package queue
