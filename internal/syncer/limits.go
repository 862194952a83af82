package syncer

import (
	"context"
	"fmt"
	"time"

	"github.com/receiptd/receiptd/internal/queue"
)

// Limits is what the worker asks of the watcher of PosAPI's own limits
// (*posapi.Watcher implements it): a gate that keeps receiptd's own
// sendData apart from receipt sends, whether a refusal is PosAPI's lottery
// reserve running out, and which receipts were issued (the forecast).
type Limits interface {
	// BeginSend waits while a sendData runs and returns the func that ends
	// the send; it fails only when ctx ends first.
	BeginSend(ctx context.Context) (func(), error)
	// ReserveRefusal reports whether the refusal (PosAPI's message) of a
	// receipt is the lottery reserve running out: the receipt then stays
	// queued.
	ReserveRefusal(ctx context.Context, b2c bool, message string) bool
	// ReceiptIssued counts a receipt the tax service issued.
	ReceiptIssued(b2c bool)
}

// noLimits is the Limits of a worker without a watcher: nothing waits,
// nothing is the reserve's.
type noLimits struct{}

func (noLimits) BeginSend(context.Context) (func(), error)         { return func() {}, nil }
func (noLimits) ReserveRefusal(context.Context, bool, string) bool { return false }
func (noLimits) ReceiptIssued(bool)                                {}

// DefaultReserveRetry is Config.ReserveRetry's zero value.
const DefaultReserveRetry = 30 * time.Second

// reserveWait turns a refusal for an empty lottery reserve into a wait: the
// receipt stays queued (nothing was issued), the attempt says why, and it
// is sent again after Config.ReserveRetry, by when receiptd's own sendData
// (posapi) has asked PosAPI to refill the reserve. A POS waiting for the
// answer gets the queued answer, not the refusal: the sale will be issued.
func (w *Worker) reserveWait(res attemptResult, message string) attemptResult {
	res.next, res.outcome, res.handoff = queue.StateQueued, nil, Result{}
	res.attempt.Result = queue.ResultNoLotteries
	res.attempt.Error = fmt.Sprintf("PosAPI's lottery reserve is empty (%s); "+
		"kept queued: receiptd asks PosAPI to send its data, and sends this receipt again once the reserve is refilled", message)
	res.nextAttemptAt = w.wall().Add(w.cfg.ReserveRetry)
	return res
}
