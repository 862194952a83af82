package queue

import (
	"context"
	"fmt"
)

// holdBatch bounds the entries one HoldRestored commit changes.
const holdBatch = 1000

// HoldRestored is the last step of restoring a backup: every receipt that
// was unsent in it (queued; sending was recovered to queued by Open) becomes
// held, and every delete waiting to be sent becomes delete_rejected, each
// with msg as its outcome's message and a "restored" record in its history.
// Any of them may have reached the tax service after the backup was taken,
// so none is sent again until an operator acts: a held receipt only with
// Retry's checked (it could be a second sale), a stopped delete with any
// Retry (a delete sent twice issues nothing).
// It returns how many entries it held or stopped.
func (q *Queue) HoldRestored(ctx context.Context, msg string) (int, error) {
	if err := q.indexTailInSlices(ctx); err != nil {
		return 0, fmt.Errorf("hold restored entries: %w", err)
	}
	total := 0
	for {
		n := 0
		err := q.update(ctx, func(b bkts) (err error) {
			n, err = holdSome(b, q, msg)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("hold restored entries: %w", err)
		}
		total += n
		if n == 0 {
			return total, nil
		}
	}
}

// holdSome holds up to holdBatch unsent entries and reports how many.
func holdSome(b bkts, q *Queue, msg string) (int, error) {
	if err := b.indexTail(0); err != nil {
		return 0, err
	}
	now := q.now().UTC()
	n := 0
	for _, step := range []struct{ from, to State }{{StateQueued, StateHeld}, {StateDeleteQueued, StateDeleteRejected}} {
		if n == holdBatch {
			break
		}
		_, err := b.eachInState(step.from, 0, holdBatch-n, func(e *Entry) error {
			q.addAttempt(e, Attempt{At: now, Result: ResultRestored, Error: msg})
			e.Outcome = withMessage(e.Outcome, msg)
			n++
			return b.setState(e, step.to, now)
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}
