package posapi

import (
	"context"
	"strings"

	"go.uber.org/zap"
)

// reserveWords are what PosAPI's message names when it refuses a B2C
// receipt for an empty reserve: the lottery, in Mongolian (the stem of
// сугалаа, сугалааны) or English. PosAPI's exact wording is not
// published (docs/decisions/posapi.md), so the match is on the word, not
// the sentence.
var reserveWords = []string{"сугалаа", "lotter"}

// ReserveRefusal reports whether PosAPI's refusal of a receipt is its
// lottery reserve running out rather than a fault of the receipt: a B2C
// receipt, refused while the reserve as last known is empty (leftLotteries
// less the B2C receipts issued since), or refused with a message naming
// the lottery while the reserve is unknown or below min_lotteries. Before
// it says no to a message naming the lottery, it reads /rest/info again
// (another till on the same PosAPI may have used the reserve up); a
// reserve still full then means the message is about something else, and
// the refusal stays a rejection, so no receipt waits forever on a full
// reserve. When it is the reserve's, the worker keeps the receipt queued
// and the watcher asks PosAPI to send its data at once (within
// send_every). On a nil *Watcher: false.
func (w *Watcher) ReserveRefusal(ctx context.Context, b2c bool, message string) bool {
	if w == nil || !b2c {
		return false
	}
	reserve := w.reserveLeftOut(message)
	if !reserve && namesLottery(message) {
		w.readInfo(ctx)
		reserve = w.reserveLeftOut(message)
	}
	w.mu.Lock()
	first := reserve && !w.info.empty
	if reserve {
		w.info.empty = true
		w.info.known = true // an empty reserve is known now, whatever /rest/info said
	}
	w.mu.Unlock()
	if first {
		w.log.Warn("PosAPI refused a B2C receipt: its lottery reserve is empty; the receipt stays queued until PosAPI has sent its data",
			zap.String("message", message))
	}
	if reserve {
		w.signal()
	}
	return reserve
}

// reserveLeftOut is ReserveRefusal's judgement on what is known now.
func (w *Watcher) reserveLeftOut(message string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	left, known := w.estLeftLocked()
	if known && left == 0 {
		return true
	}
	if !namesLottery(message) {
		return false
	}
	// A failed read leaves the reserve unknown for this purpose: keep the
	// receipt rather than reject it on old news.
	return !known || w.info.failing != "" || left < int64(w.cfg.MinLotteries)
}

func namesLottery(message string) bool {
	m := strings.ToLower(message)
	for _, word := range reserveWords {
		if strings.Contains(m, word) {
			return true
		}
	}
	return false
}
