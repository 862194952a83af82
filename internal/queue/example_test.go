package queue_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
)

// exampleReceipt is a POS's body with what the API derives from it. The
// queue does not validate receipts (package receipt does); it keeps the
// bytes, the idempotency key and a fingerprint of the body, which it only
// compares. The API's fingerprint is receipt.Fingerprint, which also
// ignores insignificant whitespace; a plain hash does here.
func exampleReceipt(key, body string) queue.NewReceipt {
	sum := sha256.Sum256([]byte(body))
	return queue.NewReceipt{IdemKey: key, Body: []byte(body), BodyHash: hex.EncodeToString(sum[:])}
}

// openExample opens a queue in a new temporary directory: a bbolt file
// and, with a LogDir, its write-ahead log beside it. closeQueue applies
// every logged record to the file, then closes the queue, the file and
// removes the directory.
func openExample(ctx context.Context) (q *queue.Queue, closeQueue func(), err error) {
	dir, err := os.MkdirTemp("", "receiptd-example")
	if err != nil {
		return nil, nil, err
	}
	st, err := store.Open(filepath.Join(dir, "receiptd.db"), store.Options{})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	q, err = queue.Open(ctx, st, queue.Options{LogDir: filepath.Join(dir, "receiptd.wal")})
	if err != nil {
		_ = st.Close()
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return q, func() {
		_ = q.Close(ctx) // before st.Close
		_ = st.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// An enqueue is durable when it returns: with a LogDir, as one record of the
// write-ahead log, applied to the bbolt file later in batches. The same key
// with the same body is a replay of the first entry; with another body it
// is a conflict naming the entry that holds the key.
func ExampleQueue_Enqueue() {
	ctx := context.Background()
	q, closeQueue, err := openExample(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeQueue()

	e, replayed, err := q.Enqueue(ctx, exampleReceipt("pos-1/0001", `{"billIdSuffix":"0001"}`))
	fmt.Println(e.QueueID, e.State, replayed, err)
	e, replayed, err = q.Enqueue(ctx, exampleReceipt("pos-1/0001", `{"billIdSuffix":"0001"}`))
	fmt.Println(e.QueueID, e.State, replayed, err)
	_, _, err = q.Enqueue(ctx, exampleReceipt("pos-1/0001", `{"billIdSuffix":"0001","totalAmount":5}`))
	var conflict *queue.ConflictError
	fmt.Println(errors.Is(err, queue.ErrConflict), errors.As(err, &conflict) && conflict.First == e.QueueID)
	// Output:
	// Q000000000001 queued false <nil>
	// Q000000000001 queued true <nil>
	// true true
}

// Claim moves the oldest due entries to sending, durably, before their
// request leaves: a crash while sending brings them back as queued, with
// an interrupted attempt.
func ExampleQueue_Claim() {
	ctx := context.Background()
	q, closeQueue, err := openExample(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeQueue()

	for _, bill := range []string{"0001", "0002", "0003"} {
		if _, _, err := q.Enqueue(ctx, exampleReceipt("pos-1/"+bill, `{"billIdSuffix":"`+bill+`"}`)); err != nil {
			fmt.Println(err)
			return
		}
	}
	claimed, err := q.Claim(ctx, 2, time.Now())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range claimed {
		fmt.Println(e.QueueID, e.State)
	}
	counts, err := q.Counts()
	fmt.Println(counts[queue.StateQueued], counts[queue.StateSending], err)
	// Output:
	// Q000000000001 sending
	// Q000000000002 sending
	// 1 2 <nil>
}

// Finish records how an attempt ended: the attempt goes into the entry's
// history and the outcome (never the lottery number or QR data) is kept.
func ExampleQueue_Finish() {
	ctx := context.Background()
	q, closeQueue, err := openExample(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeQueue()

	if _, _, err := q.Enqueue(ctx, exampleReceipt("pos-1/0001", `{"billIdSuffix":"0001"}`)); err != nil {
		fmt.Println(err)
		return
	}
	claimed, err := q.Claim(ctx, 1, time.Now())
	if err != nil || len(claimed) != 1 {
		fmt.Println(claimed, err)
		return
	}
	e, err := q.Finish(ctx, queue.Finishing{
		QueueID: claimed[0].QueueID,
		Attempt: queue.Attempt{At: time.Now(), Result: queue.ResultSuccess, HTTPStatus: 200},
		Next:    queue.StateSent,
		Outcome: &queue.Outcome{Status: "SUCCESS", ID: "037900846788001234567890123456789", HTTPStatus: 200},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.QueueID, e.State, len(e.Attempts), e.Outcome.ID)
	// A finished entry cannot be finished again.
	_, err = q.Finish(ctx, queue.Finishing{QueueID: e.QueueID, Next: queue.StateSent})
	fmt.Println(errors.Is(err, queue.ErrIllegalTransition))
	// Output:
	// Q000000000001 sent 1 037900846788001234567890123456789
	// true
}
