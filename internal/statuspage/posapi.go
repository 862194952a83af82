package statuspage

import (
	"fmt"
	"math"
	"time"
)

// PosAPI is what is known of PosAPI's own limits: its lottery reserve, its
// last send of data to the tax authority, receiptd's own sendData and the
// clock skew. The page says what needs doing before a sale fails.
type PosAPI struct {
	// LeftLotteries is the reserve as last known; nil: unknown.
	LeftLotteries *int64
	// RunOutAt is when the reserve runs out at PerHour (B2C receipts an
	// hour over the last 24 hours); zero: no forecast.
	RunOutAt time.Time
	PerHour  float64
	// LastSentDate is as PosAPI wrote it, LastSentAge its age (negative:
	// unknown).
	LastSentDate string
	LastSentAge  time.Duration
	// Need is why PosAPI should send its data now ("": it need not).
	Need string
	// LastSendData is receiptd's own last sendData; nil: none yet.
	LastSendData *SendData
	// ClockSkew is the tax service's clock minus ours; nil: unknown.
	// SkewSource says whose clock it is.
	ClockSkew  *time.Duration
	SkewSource string
	// Shared: other POS software spends PosAPI's reserve too; OwnShare
	// (0 to 1, nil: unknown) is this till's share of PacePerHour, PosAPI's
	// lotteries an hour, all its clients together (nil: unknown); PosNo
	// is PosAPI's.
	Shared      bool
	OwnShare    *float64
	PacePerHour *float64
	PosNo       string
	// The configuration the advice is worded with.
	AutoSendData bool
	MinLotteries int
	SendEvery    time.Duration
	MaxClockSkew time.Duration
}

// SendData is one sendData call of receiptd's own.
type SendData struct {
	At      time.Time
	OK      bool
	Message string
	Reason  string
}

// soonRunOut is how far ahead a forecast run-out needs attention: within
// a day, before the shop closes for the night with an empty reserve.
const soonRunOut = 24 * time.Hour

// posapiItems are the PosAPI items of "Needs attention": the reserve and
// the last send, then the clock.
func posapiItems(d Data) []attentionItem {
	p := d.PosAPI
	if p == nil {
		return nil
	}
	var items []attentionItem
	if it, ok := reserveItem(d, p); ok {
		items = append(items, it)
	}
	if p.ClockSkew != nil && p.MaxClockSkew > 0 && absDur(*p.ClockSkew) > p.MaxClockSkew {
		items = append(items, clockItem(*p))
	}
	return items
}

// reserveItem is the item for a reserve that is empty or runs out within
// soonRunOut, a send that is due, or receiptd's own sendData failing.
func reserveItem(d Data, p *PosAPI) (attentionItem, bool) {
	empty := p.LeftLotteries != nil && *p.LeftLotteries <= 0
	soon := !p.RunOutAt.IsZero() && p.RunOutAt.Sub(d.Now) < soonRunOut
	failed := p.LastSendData != nil && !p.LastSendData.OK
	// Only what needs a person: an empty reserve (B2C sales wait now), a
	// sendData that fails, or a send that is due with auto_send_data off.
	// A due send receiptd makes itself, and makes successfully, is news
	// (posapiNews), not a problem.
	if !empty && !failed && (p.AutoSendData || !soon && p.Need == "") {
		return attentionItem{}, false
	}
	it := attentionItem{ID: "posapi-lotteries", Level: levelWarn, Symbol: "⚠"}
	switch {
	case empty:
		it.Level, it.Symbol = levelCritical, "✗"
		it.Title = "PosAPI has no lottery numbers left: B2C receipts wait until it has sent its data"
		it.Why = "PosAPI refuses B2C receipts until it has sent its data to the tax authority and been given new lottery numbers. " +
			"receiptd keeps those receipts queued (not refused) and sends them as soon as the reserve is refilled."
	case soon:
		it.Title = fmt.Sprintf("Lotteries run out in about %s at today's pace", about(p.RunOutAt.Sub(d.Now)))
		it.Why = fmt.Sprintf("PosAPI has %s lottery numbers left and issues about %s B2C receipts an hour. "+
			"When none are left, B2C receipts wait until PosAPI has sent its data to the tax authority.", orQ(p.LeftLotteries), perHour(p.PerHour))
	default:
		it.Title = "PosAPI should send its data to the tax authority"
		it.Why = "PosAPI gets new lottery numbers, and keeps issuing receipts, only by sending its data regularly."
	}
	if p.Need != "" {
		it.Why += " Now: " + p.Need + "."
	}
	// A failed sendData is the cause to act on; anything else is what
	// receiptd is doing about it.
	if failed {
		it.Problem = sendDataSentence(d, p)
		it.Raw, it.RawAt = p.LastSendData.Message, ago(p.LastSendData.At, d.Now)
	} else {
		it.Why += " " + sendDataSentence(d, p)
	}
	it.Steps = reserveSteps(p)
	return it, true
}

// sendDataSentence says what receiptd did about it: "receiptd asked
// PosAPI to send its data at 10:02 and it answered: ...".
func sendDataSentence(d Data, p *PosAPI) string {
	if !p.AutoSendData {
		return "posapi.auto_send_data is off: receiptd does not ask PosAPI to send its data; a person has to."
	}
	s := p.LastSendData
	if s == nil {
		return fmt.Sprintf("receiptd asks PosAPI to send its data when it is needed (at most once every %s).", threshold(p.SendEvery))
	}
	verb := "it answered"
	if !s.OK {
		verb = "it failed"
	}
	msg := s.Message
	if msg == "" {
		msg = "nothing"
	}
	return fmt.Sprintf("receiptd asked PosAPI to send its data at %s and %s: %s", clock(s.At, d.Now), verb, msg)
}

func reserveSteps(p *PosAPI) []step {
	send := step{Text: "Ask PosAPI to send its data now (receiptd passes the request on):", Command: "curl -s http://127.0.0.1:7080/rest/sendData"}
	if hostOS == "windows" {
		send.Command = "Invoke-RestMethod http://127.0.0.1:7080/rest/sendData"
	}
	switch {
	case !p.AutoSendData:
		return []step{send, {Text: "Or let receiptd do it: set posapi.auto_send_data = true in receiptd's configuration and restart receiptd."}}
	case p.LastSendData != nil && !p.LastSendData.OK:
		return []step{
			{Text: "Check this computer's internet connection: PosAPI sends its data to the tax authority over it."},
			{Text: "Check PosAPI's own page for its state (it must be logged in and active)."},
			send,
		}
	}
	return []step{{Text: "Nothing else is needed while PosAPI's sendData works: receiptd asks again when it is needed."}}
}

func clockItem(p PosAPI) attentionItem {
	skew := *p.ClockSkew
	dir := "behind"
	if skew < 0 {
		dir = "ahead of"
	}
	whose := "the tax service's"
	switch p.SkewSource {
	case "posapi":
		whose = "PosAPI's"
	case "receipt":
		whose = "the tax service's (the date of issued receipts)"
	}
	it := attentionItem{ID: "clock", Level: levelWarn, Symbol: "⚠",
		Title: fmt.Sprintf("This computer's clock is %s %s %s clock", skewWords(absDur(skew)), dir, whose),
		Why: fmt.Sprintf("More than posapi.max_clock_skew (%s) apart. Receipts are dated by the till's clock and a sale's day "+
			"(its idempotency day) is counted by it: sales near midnight land on the wrong day, and the tax service may refuse "+
			"receipts dated in the future.", threshold(p.MaxClockSkew)),
	}
	if hostOS == "windows" {
		it.Steps = []step{
			{Text: "Synchronise the clock now (PowerShell as administrator):", Command: "w32tm /resync"},
			{Text: "If it says no time data was available, give it a source first:", Command: `w32tm /config /syncfromflags:manual /manualpeerlist:"pool.ntp.org" /update`},
		}
	} else {
		it.Steps = []step{
			{Text: "Turn on network time synchronisation:", Command: "sudo timedatectl set-ntp true"},
			{Text: "With chrony, step the clock at once:", Command: "sudo chronyc makestep"},
			{Text: "Check that it is synchronised:", Command: "timedatectl status"},
		}
	}
	return it
}

// skewWords is a clock's difference as a person says it: exact under a
// minute, "about 5 min" beyond (the readings are good to a second or two).
func skewWords(d time.Duration) string {
	if d < time.Minute {
		return human(d)
	}
	return "about " + about(d)
}

// about is a duration in round words for a forecast: "3 h", "45 min".
func about(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Round(time.Hour)/time.Hour))
	}
	return fmt.Sprintf("%d days", int(d.Round(24*time.Hour)/(24*time.Hour)))
}

func perHour(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f", math.Round(v))
	}
	return fmt.Sprintf("%.1f", v)
}

func orQ(n *int64) string {
	if n == nil {
		return "an unknown number of"
	}
	return fmt.Sprintf("%d", *n)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// sharedView is the page's line on who else uses PosAPI.
type sharedView struct {
	Text string
}

// sharedOf says in words that PosAPI serves other tills too, and what
// receiptd does about it; nil when PosAPI is not known to be shared.
func sharedOf(d Data) *sharedView {
	p := d.PosAPI
	if p == nil || !p.Shared {
		return nil
	}
	name := "This PosAPI"
	if p.PosNo != "" {
		name = fmt.Sprintf("This PosAPI (posNo %s)", p.PosNo)
	}
	text := name + " also serves other tills"
	if p.OwnShare != nil {
		text += fmt.Sprintf(": %.0f%% of its lottery numbers go to them", math.Round((1-*p.OwnShare)*100))
	}
	if p.PacePerHour != nil {
		text += fmt.Sprintf(", about %s an hour in all", perHour(*p.PacePerHour))
	}
	return &sharedView{Text: text + ". receiptd forecasts the reserve at PosAPI's pace, and one till's sendData refills it for all."}
}
