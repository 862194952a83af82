package posapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
)

// SendData is the result of receiptd's last own sendData call.
type SendData struct {
	At      time.Time `json:"at"`
	OK      bool      `json:"ok"`
	Message string    `json:"message"`
	// Reason is why receiptd called it (for the page and the log).
	Reason string `json:"-"`
}

// sendState is receiptd's own sendData calls; guarded by Watcher.mu.
type sendState struct {
	last       *SendData
	tried      time.Time // the last call's start (send_every counts from it)
	running    bool
	ok, failed uint64
}

// maxMessage bounds a kept sendData message, in bytes.
const maxMessage = 300

// BeginSend is called by the sync worker before each request to PosAPI's
// receipt route: it waits while receiptd's own sendData runs (or waits to
// run) and returns the func that ends the send. It fails only when ctx
// ends first. On a nil *Watcher it returns at once.
func (w *Watcher) BeginSend(ctx context.Context) (func(), error) {
	if w == nil {
		return func() {}, nil
	}
	return w.gate.shared(ctx)
}

// estLeftLocked is leftLotteries less the B2C receipts issued since it
// was read, and whether it is known; mu held.
func (w *Watcher) estLeftLocked() (int64, bool) {
	if !w.info.known {
		return 0, false
	}
	if w.info.empty {
		return 0, true
	}
	return max(w.info.left-w.info.issued, 0), true
}

// needLocked is why PosAPI should send its data now, or ""; mu held.
func (w *Watcher) needLocked(now time.Time) string {
	left, known := w.estLeftLocked()
	switch {
	case w.info.empty:
		return "PosAPI refused a B2C receipt because its lottery reserve is empty"
	case known && left == 0:
		return "PosAPI's lottery reserve is empty"
	case known && left < int64(w.cfg.MinLotteries):
		return fmt.Sprintf("only %d lottery numbers are left (posapi.min_lotteries = %d)", left, w.cfg.MinLotteries)
	case !w.info.sent.IsZero() && now.Sub(w.info.sent) > w.cfg.SendAfter:
		return fmt.Sprintf("PosAPI last sent its data %s ago (posapi.send_after = %s)", roundAge(now.Sub(w.info.sent)), w.cfg.SendAfter)
	}
	if w.cfg.RefillBefore > 0 {
		if perHour, at, ok := w.forecastLocked(now); ok && at.Sub(now) < w.cfg.RefillBefore {
			return fmt.Sprintf("at %.0f lottery numbers an hour, PosAPI's reserve runs out in %s (posapi.refill_before = %s)",
				perHour, roundAge(at.Sub(now)), w.cfg.RefillBefore)
		}
	}
	return ""
}

// stepBackSlack: a sendData made up to this long after now (the wall
// clock stepped back a little since) still counts as recent; one made
// further ahead does not hold sends back.
const stepBackSlack = 15 * time.Second

// sentRecentlyLocked reports whether a sendData, receiptd's own or any
// other client's (PosAPI's lastSentDate seen to move), was made within
// send_every; mu held. A lastSentDate as first read counts only once it
// moves: PosAPI may write its own start there. A till known to be
// PosAPI's only client counts its own calls alone, as it always did (a
// move it did not make is PosAPI's own doing, a restart say).
func (w *Watcher) sentRecentlyLocked(now time.Time) bool {
	moved := w.sentMoved
	if w.wide.alone(now) {
		moved = time.Time{}
	}
	for _, at := range []time.Time{w.send.tried, moved} {
		if !at.IsZero() && now.Sub(at) < w.cfg.SendEvery && !now.Before(at.Add(-stepBackSlack)) {
			return true
		}
	}
	return false
}

// sendDue is the reason to call sendData now, or "": needed, allowed
// (auto_send_data), PosAPI answering, and send_every since the last call.
func (w *Watcher) sendDue(now time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	need := w.needLocked(now)
	if need == "" {
		w.needWarned = ""
		return ""
	}
	if !w.cfg.AutoSendData {
		if w.needWarned != need {
			w.needWarned = need
			w.log.Warn("PosAPI should send its data, and posapi.auto_send_data is off: a person has to",
				zap.String("reason", need))
		}
		return ""
	}
	answering := w.info.failing == "" || w.info.empty
	if !answering || w.send.running || w.sentRecentlyLocked(now) {
		return ""
	}
	return need
}

// sendData calls GET /rest/sendData once no receipt is being sent, keeps
// the result and reads /rest/info again.
func (w *Watcher) sendData(ctx context.Context, reason string) {
	w.mu.Lock()
	w.send.running, w.send.tried = true, w.cfg.Now()
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.send.running = false
		w.mu.Unlock()
	}()
	release, err := w.gate.exclusive(ctx)
	if err != nil {
		return // shutting down
	}
	at := w.cfg.Now()
	raw, err := w.up.Get(ctx, client.OpSendData, nil)
	release()
	if ctx.Err() != nil {
		return // cut short by shutdown: says nothing of PosAPI
	}
	res := SendData{At: at, Reason: reason}
	res.OK, res.Message = judgeSendData(raw, err)
	w.mu.Lock()
	w.send.last = &res
	if res.OK {
		w.send.ok++
		w.info.empty = false
	} else {
		w.send.failed++
	}
	w.mu.Unlock()
	if res.OK {
		w.log.Info("asked PosAPI to send its data to the tax authority", zap.String("reason", reason), zap.String("answer", res.Message))
	} else {
		w.log.Warn("PosAPI could not send its data to the tax authority", zap.String("reason", reason), zap.String("answer", res.Message))
	}
	w.readInfo(ctx)
}

// judgeSendData reads sendData's answer: a 2xx answer is a success unless
// its body says status ERROR (the interface documents no body; the
// published clients see an empty one or {}). The message is PosAPI's, or
// what failed.
func judgeSendData(raw *client.Raw, err error) (bool, string) {
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) && ce.Message != "" && ce.StatusCode != 0 {
			return false, clip(fmt.Sprintf("HTTP %d: %s", ce.StatusCode, ce.Message))
		}
		return false, clip(err.Error())
	}
	var body struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw.Body, &body) // any body, or none, is an answer
	if strings.EqualFold(body.Status, client.StatusError) {
		return false, clip(fmt.Sprintf("HTTP %d: %s", raw.StatusCode, body.Message))
	}
	if body.Message != "" {
		return true, clip(body.Message)
	}
	return true, fmt.Sprintf("HTTP %d", raw.StatusCode)
}

// clip bounds a message at maxMessage bytes, on a rune boundary.
func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// roundAge is an age rounded for a person (minutes under a day, hours
// beyond).
func roundAge(d time.Duration) time.Duration {
	if d >= 24*time.Hour {
		return d.Round(time.Hour)
	}
	return d.Round(time.Minute)
}
