package syncer

import (
	"time"
)

// answerOverhead is what one held answer costs besides its body and id
// (the record, its map slot and its place in the order), counted against
// Config.MaxResultBytes so that many tiny answers are bounded too.
const answerOverhead = 160

// answers is a Mailbox's store: the answers and markers held, bounded by
// count, by bytes and by time (replayTTL is MailboxConfig.ResultTTL,
// answerTTL its AnswerTTL), the entries being sent right now, and the
// requests waiting. It has no lock of its own: Mailbox.mu guards it.
type answers struct {
	replayTTL, answerTTL time.Duration
	maxCount             int
	maxBytes             int64

	held     map[string]*heldAnswer
	order    []*heldAnswer // publication order, oldest first; removed records are skipped
	bytes    int64
	seq      uint64            // attempts begun and answers put so far: the mailbox's clock, Mark
	inflight map[string]uint64 // entries being sent: when their attempt began
	// forgot holds, for an entry an operator put back in the queue while
	// an attempt was still between its outcome's commit and its publish,
	// the mark of that retry: the attempt's answer, when it comes, is
	// stale and is not held.
	forgot  map[string]uint64
	waiters map[string][]chan Result
}

type heldAnswer struct {
	id        string
	r         Result
	expires   time.Time
	size      int64
	began     uint64 // when the attempt it answers began, in answers.seq
	delivered bool   // given in full to a POS: a waiting request, a replay or the late route
	removed   bool
}

func newAnswers(c MailboxConfig) answers {
	return answers{
		replayTTL: c.ResultTTL, answerTTL: c.AnswerTTL, maxCount: c.MaxResults, maxBytes: c.MaxResultBytes,
		held: map[string]*heldAnswer{}, inflight: map[string]uint64{}, forgot: map[string]uint64{},
		waiters: map[string][]chan Result{},
	}
}

// begin records that an attempt for id begins and returns when, for put.
func (a *answers) begin(id string) uint64 {
	a.seq++
	a.inflight[id] = a.seq
	return a.seq
}

// put keeps r, the answer of the attempt for id that began at began,
// replacing what was held, and ends that attempt's send; an answer an
// operator's retry made stale before it came is not kept. It returns the
// ids of answers nobody had received that the bounds pushed out (r's own
// included when it alone is larger than the byte bound).
func (a *answers) put(id string, began uint64, r Result, now time.Time) (dropped []string) {
	if a.inflight[id] == began {
		delete(a.inflight, id)
	}
	if mark, ok := a.forgot[id]; ok && began <= mark {
		delete(a.forgot, id)
		return nil
	}
	a.remove(id)
	h := &heldAnswer{id: id, r: r, size: int64(len(r.Body)+len(id)) + answerOverhead, expires: now.Add(a.replayTTL), began: began}
	if r.Answered {
		h.expires = now.Add(a.answerTTL)
	}
	if h.size > a.maxBytes {
		if r.Answered {
			dropped = append(dropped, id)
		}
		return dropped
	}
	a.held[id] = h
	a.order = append(a.order, h)
	a.bytes += h.size
	for len(a.held) > a.maxCount || a.bytes > a.maxBytes {
		old := a.order[0]
		a.order = a.order[1:]
		if old.removed {
			continue
		}
		if old.r.Answered && !old.delivered {
			dropped = append(dropped, old.id)
		}
		a.remove(old.id)
	}
	a.compact()
	return dropped
}

// get returns what is held for id, unless it has expired.
func (a *answers) get(id string, now time.Time) (*heldAnswer, bool) {
	h, ok := a.held[id]
	if !ok || !now.Before(h.expires) {
		return nil, false
	}
	return h, true
}

// deliver records that id's answer was given to a POS: from now on it
// lives at most replayTTL more.
func (a *answers) deliver(h *heldAnswer, now time.Time) {
	h.delivered = true
	if end := now.Add(a.replayTTL); end.Before(h.expires) {
		h.expires = end
	}
}

func (a *answers) remove(id string) {
	if h, ok := a.held[id]; ok {
		h.removed = true
		a.bytes -= h.size
		delete(a.held, id)
	}
}

// expire forgets everything past its time. It walks every held record:
// lifetimes differ, so publication order is not expiry order.
func (a *answers) expire(now time.Time) {
	for id, h := range a.held {
		if !now.Before(h.expires) {
			a.remove(id)
		}
	}
	a.compact()
}

// compact drops removed records from order once they are the majority, so
// that order stays within twice the held count.
func (a *answers) compact() {
	for len(a.order) > 0 && a.order[0].removed {
		a.order = a.order[1:]
	}
	if len(a.order) <= 2*len(a.held)+16 {
		return
	}
	kept := make([]*heldAnswer, 0, len(a.held))
	for _, h := range a.order {
		if !h.removed {
			kept = append(kept, h)
		}
	}
	a.order = kept
}

// failWaiters releases every waiting POS request without an answer; the
// entries' states are left as they are (State is empty).
func (a *answers) failWaiters() {
	for id, chans := range a.waiters {
		for _, ch := range chans {
			ch <- Result{}
		}
		delete(a.waiters, id)
	}
}

// unwait removes ch from id's waiters.
func (a *answers) unwait(id string, ch chan Result) {
	chans := a.waiters[id]
	for i, c := range chans {
		if c == ch {
			a.waiters[id] = append(chans[:i], chans[i+1:]...)
			break
		}
	}
	if len(a.waiters[id]) == 0 {
		delete(a.waiters, id)
	}
}
