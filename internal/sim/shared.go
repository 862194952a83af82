package sim

import (
	"context"
	"net/http"
)

// A PosAPI serves several tills (the vendor's manual, §1.1): other POS
// software spends the same reserve (Faults.OtherPace), and while PosAPI
// sends its data every create waits for the send to end, as the live
// service holds them.

// maxOtherPace bounds Faults.OtherPace, lotteries a second.
const maxOtherPace = 100000

// others is the other POS software on this PosAPI: what it spent and the
// sendData in progress; guarded by Sim.mu.
type others struct {
	at      int64   // Unix nanoseconds of the last spend (0: not yet)
	carry   float64 // the part of a lottery spent but not yet counted
	spent   int     // lotteries other software spent
	refused int     // B2C creates refused for an empty reserve
	// sending counts sendData calls in progress; done is closed when the
	// last ends.
	sending int
	done    chan struct{}
}

// spendOthersLocked takes from the reserve what other software spent at
// Faults.OtherPace since the last call; mu held. An empty reserve stays
// empty: their receipts are refused like ours.
func (s *Sim) spendOthersLocked() {
	now := s.now().UnixNano()
	last := s.others.at
	s.others.at = now
	if last == 0 || now <= last || s.faults.OtherPace <= 0 {
		s.others.carry = 0
		return
	}
	due := s.others.carry + s.faults.OtherPace*float64(now-last)/1e9
	n := int(due)
	s.others.carry = due - float64(n)
	n = min(n, s.left)
	s.left -= n
	s.others.spent += n
}

// holdCreates marks a sendData in progress until the returned func.
func (s *Sim) holdCreates() func() {
	s.mu.Lock()
	s.others.sending++
	if s.others.done == nil {
		s.others.done = make(chan struct{})
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.others.sending--; s.others.sending == 0 {
			close(s.others.done)
			s.others.done = nil
		}
	}
}

// waitSendData holds a create while a sendData runs; false when ctx ended
// first.
func (s *Sim) waitSendData(ctx context.Context) bool {
	for {
		s.mu.Lock()
		done := s.others.done
		s.mu.Unlock()
		if done == nil {
			return true
		}
		select {
		case <-done:
		case <-ctx.Done():
			return false
		}
	}
}

// Lotteries is GET /sim/lotteries: the reserve and what happened to it.
type Lotteries struct {
	Left int `json:"left"`
	// Reserve is what a sendData refills it to.
	Reserve int `json:"reserve"`
	// OthersSpent is what other POS software spent (Faults.OtherPace).
	OthersSpent int `json:"othersSpent"`
	// RefusedEmpty counts B2C creates refused for an empty reserve.
	RefusedEmpty int `json:"refusedEmpty"`
	// SendData counts successful sendData calls.
	SendData int `json:"sendData"`
}

// LotteryStats returns the reserve and what happened to it.
func (s *Sim) LotteryStats() Lotteries {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spendOthersLocked()
	return Lotteries{Left: s.left, Reserve: s.reserve, OthersSpent: s.others.spent,
		RefusedEmpty: s.others.refused, SendData: s.sendDataOK}
}

func (s *Sim) getLotteries(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.LotteryStats())
}
