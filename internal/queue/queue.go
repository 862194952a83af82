package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/wal"
)

// Sentinel errors.
var (
	// ErrNotFound means no entry has the given queueId.
	ErrNotFound = errors.New("queue entry not found")
	// ErrConflict means an idempotency key was reused with a different body.
	ErrConflict = errors.New("idempotency key reused with a different body")
	// ErrIllegalTransition means the requested change is not allowed from
	// the entry's current state.
	ErrIllegalTransition = errors.New("illegal state transition")
	// ErrUnchecked means a held entry was to be retried without the
	// operator's word that the tax service was checked first (Retry).
	ErrUnchecked = errors.New("a held entry is retried only after checking with the tax service")
	// ErrInvalid means a caller passed an unusable argument.
	ErrInvalid = errors.New("invalid queue request")
)

// ConflictError is the ErrConflict of Enqueue: it names the entry that
// holds the key.
type ConflictError struct {
	First string // queueId of the entry that holds the key
	State State  // its state
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%v (first entry %s, %s)", ErrConflict, e.First, e.State)
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// State is an entry's state, as named in docs/contract.md ("Entry states").
type State string

// Entry states.
const (
	StateQueued         State = "queued"
	StateSending        State = "sending"
	StateSent           State = "sent"
	StatePayment        State = "payment"
	StateRejected       State = "rejected"
	StateHeld           State = "held"
	StateCancelled      State = "cancelled"
	StateDeleteQueued   State = "delete_queued"
	StateDeleted        State = "deleted"
	StateDeleteRejected State = "delete_rejected"
)

// AllStates lists every state, in the order of docs/contract.md.
var AllStates = []State{StateQueued, StateSending, StateSent, StatePayment, StateRejected,
	StateHeld, StateCancelled, StateDeleteQueued, StateDeleted, StateDeleteRejected}

// Kind tells a receipt entry from a delete entry.
type Kind string

// Entry kinds.
const (
	KindReceipt Kind = "receipt"
	KindDelete  Kind = "delete"
)

// Result is how one attempt ended.
type Result string

// Attempt results.
const (
	ResultSuccess     Result = "success"
	ResultPayment     Result = "payment"
	ResultRejected    Result = "rejected"
	ResultTransient   Result = "transient"
	ResultNotSent     Result = "not_sent"
	ResultAmbiguous   Result = "ambiguous"
	ResultInterrupted Result = "interrupted" // receiptd stopped mid-attempt
	// ResultDamaged: nothing was sent, the stored body failed its check
	// against BodyHash.
	ResultDamaged Result = "damaged_body"
	// ResultNoLotteries: PosAPI refused a B2C receipt because its lottery
	// reserve is empty; nothing was issued, and the entry stays queued
	// until the reserve is refilled (package posapi).
	ResultNoLotteries Result = "no_lotteries"
	// ResultOperatorRetry: not an attempt, the record of an operator's
	// retry (Retry); UpstreamID keeps the earlier outcome's id.
	ResultOperatorRetry Result = "operator_retry"
	// ResultRestored: not an attempt, the record of a restore from a
	// backup that held the entry (HoldRestored).
	ResultRestored Result = "restored"
)

// Entry is one receipt or delete request. Times are UTC.
type Entry struct {
	QueueID    string    `json:"queueId"`
	Kind       Kind      `json:"kind"`
	State      State     `json:"state"`
	AcceptedAt time.Time `json:"acceptedAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// Body is what gets sent: a receipt's request bytes exactly as the POS
	// sent them, or a delete's {"id","date"} (empty while the id is unknown).
	Body         json.RawMessage `json:"body,omitempty"`
	IdemKey      string          `json:"idempotencyKey,omitempty"`
	BodyHash     string          `json:"bodyHash,omitempty"`
	MerchantTin  string          `json:"merchantTin,omitempty"`
	PosNo        string          `json:"posNo,omitempty"`
	BillIDSuffix string          `json:"billIdSuffix,omitempty"`
	Attempts     []Attempt       `json:"attempts"`
	// AttemptsDropped counts middle attempts dropped to bound the history;
	// the first attempt and the latest ones are kept.
	AttemptsDropped int      `json:"attemptsDropped,omitempty"`
	Outcome         *Outcome `json:"outcome,omitempty"`
	// NextAttemptAt: Claim skips the entry until then (per-entry backoff).
	NextAttemptAt time.Time `json:"nextAttemptAt,omitzero"`
	DeleteTarget  string    `json:"deleteTarget,omitempty"` // delete: the receipt's queueId, when known
	DeleteID      string    `json:"deleteId,omitempty"`     // delete: the upstream id to send
	DeleteDate    string    `json:"deleteDate,omitempty"`   // delete: the date to send
	Ambiguous     int       `json:"ambiguousAttempts,omitempty"`
}

// Attempt is one try at sending an entry upstream.
type Attempt struct {
	At         time.Time     `json:"at"`
	Duration   time.Duration `json:"durationNs"`
	Result     Result        `json:"result"`
	Error      string        `json:"error,omitempty"`
	HTTPStatus int           `json:"httpStatus,omitempty"`
	// UpstreamID is the tax service's id that an earlier outcome carried,
	// on an operator's retry record.
	UpstreamID string `json:"upstreamId,omitempty"`
}

// Outcome is the upstream's answer as kept. It has no lottery or qrData
// field on purpose: those must never reach the disk.
type Outcome struct {
	Status      string       `json:"status,omitempty"`
	ID          string       `json:"id,omitempty"`
	Date        string       `json:"date,omitempty"`
	PosID       string       `json:"posId,omitempty"`
	SubReceipts []SubReceipt `json:"receipts,omitempty"`
	Message     string       `json:"message,omitempty"`
	HTTPStatus  int          `json:"httpStatus,omitempty"`
}

// SubReceipt is one sub-receipt of a create response.
type SubReceipt struct {
	ID            string `json:"id"`
	BankAccountID string `json:"bankAccountId,omitempty"`
}

// HeldOutcome is the outcome of a receipt held after n ambiguous attempts:
// it may have been issued up to n times, and only the tax service can say.
func HeldOutcome(n int) *Outcome {
	return &Outcome{Message: fmt.Sprintf("held after %d ambiguous attempts (sync.max_ambiguous): "+
		"the tax service may have issued this receipt; check there before a retry", n)}
}

// Options configures Open. The zero value is ready to use.
type Options struct {
	// Now is the clock for UpdatedAt and recovery. Nil means time.Now.
	Now func() time.Time
	// MaxAttempts bounds the attempt history kept per entry. Zero means 100.
	MaxAttempts int
	// MaxAmbiguous is sync.max_ambiguous: a receipt that Open finds in
	// sending with this many ambiguous attempts (the interrupted one
	// included) is held instead of queued. Zero means 3.
	MaxAmbiguous int
	// LogDir is the write-ahead log's directory (log.go): an enqueue is
	// then one log record, applied to the file in batches by ApplyLoop
	// and by every other write. Empty means no log: each enqueue is its
	// own commit of the file (tools, and tests of the file's layout).
	LogDir string
	// LogSegmentSize is the log's segment size in bytes; zero means
	// wal.DefaultSegmentSize.
	LogSegmentSize int64
	// ApplyDelay is how long the till must be quiet (no log record made
	// durable) before ApplyLoop applies the log's records, so that a busy
	// till makes one commit for many receipts and none between sales that
	// follow each other closely. Zero means 50ms.
	ApplyDelay time.Duration
	// TailIndexBatch bounds how many entries of the unindexed tail one
	// claim indexes, and the slices in which a delete request indexes a
	// long tail (layout.go). Zero means 1000.
	TailIndexBatch int
}

// Defaults of Options' zero fields.
const (
	defaultApplyDelay     = 50 * time.Millisecond
	defaultTailIndexBatch = 1000
)

// Queue is the durable queue. It is safe for concurrent use.
type Queue struct {
	st          *store.Store
	now         func() time.Time
	maxAttempts int
	maxAmbig    int
	notify      chan struct{}
	recovered   int
	applyDelay  time.Duration // Options.ApplyDelay
	tailBatch   int           // Options.TailIndexBatch
	keys        *keyFilter    // the file's idempotency keys (keyfilter.go)

	// With a log (log.go):
	log     *wal.Log
	ov      overlay
	applyCh chan struct{} // capacity 1: records became durable
	walMu   sync.Mutex    // orders enqueues; guards nextSeq, lastLSN, closed
	nextSeq uint64        // the queueId the next logged enqueue takes
	lastLSN uint64        // the newest record appended
	closed  bool
}

// Open prepares the queue's buckets and recovers entries a crash left in
// sending: receipts go back to queued and deletes to delete_queued, each
// with an "interrupted" attempt counted as ambiguous. Open reads only the
// sending index, never the whole queue. With a log, it applies the
// records the file has not (log.go).
func Open(ctx context.Context, st *store.Store, opts Options) (*Queue, error) {
	q := &Queue{st: st, now: opts.Now, maxAttempts: opts.MaxAttempts, notify: make(chan struct{}, 1),
		applyCh: make(chan struct{}, 1), ov: overlay{byKey: map[string]*logRec{}, bySeq: map[uint64]*logRec{}}}
	if q.now == nil {
		q.now = time.Now
	}
	if q.maxAttempts <= 0 {
		q.maxAttempts = 100
	}
	q.maxAmbig = opts.MaxAmbiguous
	if q.maxAmbig <= 0 {
		q.maxAmbig = 3
	}
	q.applyDelay = opts.ApplyDelay
	if q.applyDelay <= 0 {
		q.applyDelay = defaultApplyDelay
	}
	q.tailBatch = opts.TailIndexBatch
	if q.tailBatch <= 0 {
		q.tailBatch = defaultTailIndexBatch
	}
	err := st.Update(ctx, func(tx *bbolt.Tx) error {
		root := tx.Bucket(store.BucketQueue)
		if root == nil {
			return fmt.Errorf("bucket %q missing", store.BucketQueue)
		}
		for _, name := range allBuckets {
			if _, err := root.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		b := buckets(tx)
		if root.Get(keyIndexed) == nil {
			// A new file, or one of schema 1, where every entry has its
			// index rows: the tail starts empty.
			if err := root.Put(keyIndexed, seqKey(b.entries.Sequence())); err != nil {
				return err
			}
		}
		q.keys = filterOf(b.idem)
		if lo, hi, err := b.tail(); err != nil || lo > hi+1 {
			// Entries enqueued from here on would look indexed without
			// rows: never claimed, never counted.
			return fmt.Errorf("%w: %s: the queue's index mark %d is past its last entry %d (%v)",
				store.ErrCorrupt, st.Path(), lo-1, hi, err)
		}
		if opts.LogDir != "" {
			return nil // after the log's outcomes are applied: below
		}
		n, err := recoverSending(b, q.now().UTC(), q.maxAmbig)
		q.recovered = n
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open queue: %w", err)
	}
	replayed := 0
	if opts.LogDir != "" {
		if replayed, err = q.openLog(ctx, opts.LogDir, opts.LogSegmentSize); err != nil {
			return nil, fmt.Errorf("open queue: %w", err)
		}
	}
	if opts.LogDir != "" {
		// Recovery comes after the log's records are applied: they may
		// hold the outcome of an entry the file has in sending (it is
		// finished, not interrupted), and receipts whose accept carried
		// the claim (interrupted like any other).
		n, err := q.recoverAfterLog(ctx)
		if err != nil {
			_ = q.log.Close()
			return nil, fmt.Errorf("open queue: %w", err)
		}
		q.recovered = n
	}
	if q.recovered > 0 || replayed > 0 {
		q.signal()
	}
	return q, nil
}

// recoverAfterLog is recoverSending once the log is applied, in a commit
// of its own only when an entry is in sending.
func (q *Queue) recoverAfterLog(ctx context.Context) (int, error) {
	var any bool
	err := q.view(func(b bkts, _ pending) error {
		seqs, err := b.seqsInState(StateSending, 0, 1)
		any = len(seqs) > 0
		return err
	})
	if err != nil || !any {
		return 0, err
	}
	var n int
	err = q.update(ctx, func(b bkts) (err error) {
		n, err = recoverSending(b, q.now().UTC(), q.maxAmbig)
		return err
	})
	return n, err
}

// Recovered is how many entries Open moved out of sending.
func (q *Queue) Recovered() int { return q.recovered }

// Notify returns a channel signalled (capacity 1, never blocking) when new
// work becomes claimable: an enqueue, a retry, a queued delete, a delete
// whose receipt finished, or recovery at Open.
func (q *Queue) Notify() <-chan struct{} { return q.notify }

func (q *Queue) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// recoverSending moves entries a crash left in sending back to be sent,
// counting the attempt as ambiguous; a receipt with maxAmbig ambiguous
// attempts is held instead (sync.max_ambiguous).
func recoverSending(b bkts, now time.Time, maxAmbig int) (int, error) {
	n, err := b.eachInState(StateSending, 0, 0, func(e *Entry) error {
		e.Attempts = append(e.Attempts, Attempt{At: now, Result: ResultInterrupted,
			Error: "receiptd stopped while this attempt was in flight; it may have reached the tax service"})
		e.Ambiguous++
		e.NextAttemptAt = time.Time{}
		to := StateQueued
		switch {
		case e.Kind == KindDelete:
			to = StateDeleteQueued
		case e.Ambiguous >= maxAmbig:
			to = StateHeld
			e.Outcome = HeldOutcome(e.Ambiguous)
		}
		return b.setState(e, to, now)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
