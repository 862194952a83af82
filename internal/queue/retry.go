package queue

import (
	"context"
	"fmt"
	"time"
)

// Retry is the operator's retry: rejected, payment or held → queued, and
// delete_rejected → delete_queued, claimable at once. A held entry may have
// reached the tax service already (its answer was lost, or it was restored
// from a backup), so it is retried only with checked true, the operator's
// word that the tax service has been asked; otherwise ErrUnchecked. The
// retry is recorded in the entry's attempts with the earlier outcome's
// upstream id, so a payment entry's first receipt id stays in its history
// once the new attempt replaces the outcome. Anything else is
// ErrIllegalTransition.
func (q *Queue) Retry(ctx context.Context, queueID string, checked bool) (Entry, error) {
	var e Entry
	err := q.update(ctx, func(b bkts) error {
		var err error
		if e, _, err = b.loadID(queueID); err != nil {
			return err
		}
		var to State
		switch e.State {
		case StateHeld:
			if !checked {
				return fmt.Errorf("%w: %s", ErrUnchecked, queueID)
			}
			to = StateQueued
		case StateRejected, StatePayment:
			to = StateQueued
		case StateDeleteRejected:
			to = StateDeleteQueued
		default:
			return illegal(&e, StateQueued)
		}
		now := q.now().UTC()
		q.addAttempt(&e, retryRecord(e, now))
		e.NextAttemptAt = time.Time{}
		return b.setState(&e, to, now)
	})
	if err != nil {
		return Entry{}, fmt.Errorf("retry %s: %w", queueID, err)
	}
	q.signal()
	return e, nil
}

// retryRecord is the history line of an operator's retry.
func retryRecord(e Entry, now time.Time) Attempt {
	a := Attempt{At: now, Result: ResultOperatorRetry, Error: "put back in the queue by an operator from " + string(e.State)}
	if o := e.Outcome; o != nil {
		a.UpstreamID = o.ID
		if o.ID != "" {
			a.Error += "; the earlier answer was " + o.Status + " with upstream id " + o.ID
			if o.Date != "" {
				a.Error += " of " + o.Date
			}
		}
	}
	return a
}
