package syncer

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/queue"
)

// runState is what a running worker lends a Slot: the contexts and the
// wait group of its sends. Run sets it and clears it, under Worker.mu,
// before it waits for its sends.
type runState struct {
	loopCtx, sendCtx context.Context
	sends            *sync.WaitGroup
}

// Slot is a send slot the API holds for a new receipt whose accept carries
// its claim (queue.NewReceipt.Sending): the receipt's record says sending
// when it becomes durable, and the slot's Send starts its attempt at
// once, with no claim commit between the record and the request. A Slot
// is used once: Send or Release, and only one of them.
type Slot struct {
	w       *Worker
	run     runState
	predial *client.Predial // the create's connection, dialed while its record is flushed; nil: none
}

// predialer is the part of the tax service's client that dials a
// create's connection ahead (*client.Client implements it).
type predialer interface{ Predial() *client.Predial }

// TakeSlot takes a free send slot for a new receipt, or returns nil when
// none is to be had: the worker is not running, the upstream is down or
// asked for a pause, every slot is busy, or receipts already wait to be
// claimed (a new sale does not go ahead of them). The caller must Send or
// Release it: Run waits for it before it returns.
func (w *Worker) TakeSlot() *Slot {
	w.mu.Lock()
	if w.run == nil || w.run.loopCtx.Err() != nil || w.link.down || w.link.pauseUntil.After(w.now()) {
		w.mu.Unlock()
		return nil
	}
	select {
	case w.slots <- struct{}{}:
	default:
		w.mu.Unlock()
		return nil
	}
	w.run.sends.Add(1) // before Run can stop waiting: it clears run under mu first
	s := &Slot{w: w, run: *w.run}
	w.mu.Unlock()
	idle, err := w.q.NothingClaimable(w.wall())
	if err != nil || !idle {
		if err != nil {
			w.log.Debug("reading the queue before a new receipt's claim", zap.Error(err))
		}
		s.Release()
		return nil
	}
	if pd, ok := w.up.(predialer); ok {
		s.predial = pd.Predial()
	}
	return s
}

// Send starts the attempt on e, which the queue returned new in state
// sending for this slot. The attempt goes on as any other: its outcome
// recorded, its answer handed to the waiting request, and, while the
// upstream answers, the slot goes on to the next claimable entry.
func (s *Slot) Send(e queue.Entry) {
	TracePhase("claimed", e.QueueID)
	go func() {
		defer s.run.sends.Done()
		s.w.sendLoop(s.run.loopCtx, client.WithPredial(s.run.sendCtx, s.predial), e, true, s.predial.Close)
	}()
}

// SendHere makes the first attempt on e, as Send does, on the caller's
// goroutine (the request that accepted e), and returns its answer once
// the outcome is in the log's file and the answer handed over to the
// mailbox (for replays): no goroutine stands between the accept, the
// request to the tax service and the answer. Result.Answered false: no
// answer to give (the attempt failed, or its outcome could not be a
// record of the log and is recorded, and its answer handed over, by done's
// goroutine). done must be called once, after the caller has written its
// answer: it frees the slot and leaves the outcome's flush and the count
// to a goroutine of its own (or, when the outcome is not yet in the log's
// file, its record and the slot's next entries, as Send's goroutine).
func (s *Slot) SendHere(e queue.Entry) (res Result, done func()) {
	w, loopCtx := s.w, s.run.loopCtx
	sendCtx := client.WithPredial(s.run.sendCtx, s.predial)
	TracePhase("claimed", e.QueueID)
	att := w.attempt(sendCtx, e, false)
	att.awaited = true
	s.predial.Close()
	w.noteLink(att)
	claim := w.claimAfter(loopCtx, att, true)
	log := w.counted(e, att)
	// An error leaves the outcome to done's goroutine, which retries
	// (record) and says so.
	durable, written, _ := w.q.FinishWrite(sendCtx, w.finishing(e, att, func() { w.handOver(e, att) }))
	if written {
		res = att.handoff
		res.State = att.next
	}
	return res, func() {
		if written {
			// The attempt is over: its slot is the next sale's to take
			// while the outcome waits for its flush, which that sale's
			// own accept usually makes. (Held until then, it kept a POS
			// that posts its next sale at once from the slots about once
			// in a hundred sales: that sale was queued, and sent by the
			// worker a few ms later.) What the outcome leaves claimable
			// is the worker's to claim, once the outcome is durable.
			<-w.slots
		}
		go func() {
			defer s.run.sends.Done()
			if written {
				crashPoint("published") // the answer written to the POS, the outcome in the log's file, its flush not begun
				if _, err := durable(sendCtx, 0, w.wall()); err != nil {
					notFlushed(log, att, err)
				} else {
					logOutcome(log, att)
				}
				w.countIssued(e, att)
				w.signal()
				return
			}
			next, more := w.recordCounted(sendCtx, log, e, att, claim)
			w.countIssued(e, att)
			if !more {
				<-w.slots
				w.signal()
				return
			}
			TracePhase("claimed", next.QueueID)
			w.sendLoop(loopCtx, sendCtx, next, true, nil)
		}()
	}
}

// Release gives the slot back unused: the receipt was a replay, or was
// stored queued, or not at all.
func (s *Slot) Release() {
	s.predial.Close()
	<-s.w.slots
	s.w.signal()
	s.run.sends.Done()
}
