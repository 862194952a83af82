package statuspage

import (
	"fmt"
	"strings"
)

// newsView is a line of what receiptd did on its own that needs nobody:
// shown in its section, never under "Needs attention".
type newsView struct {
	Level, Symbol, Text string
}

// posapiNews is the PosAPI section's line: the reserve and receiptd's own
// last sendData, when PosAPI is known and no card is about it (the card
// says it then).
func posapiNews(d Data) *newsView {
	p := d.PosAPI
	if p == nil {
		return nil
	}
	if _, card := reserveItem(d, p); card {
		return &newsView{Level: levelWarn, Symbol: "⚠", Text: "See “Needs attention” above."}
	}
	text := "PosAPI has " + orQ(p.LeftLotteries) + " lottery numbers left"
	if !p.RunOutAt.IsZero() {
		text += fmt.Sprintf(", enough for about %s at today's pace", about(p.RunOutAt.Sub(d.Now)))
	}
	text += "."
	if p.LastSentDate != "" {
		text += " It last sent its data on " + p.LastSentDate + "."
	}
	if p.LastSendData != nil || p.Need != "" {
		text += " " + strings.TrimSuffix(sendDataSentence(d, p), ".") + "."
	}
	if p.Need != "" {
		text += " Still due: " + p.Need + "; receiptd asks again when it is due, and nothing is needed from you while that works."
	}
	return &newsView{Level: levelOK, Symbol: "✓", Text: text}
}

// Alert is the level /receiptd/status reports as "alert": the highest level
// of the problems "Needs attention" shows for d (AlertNone when it shows
// none). d.Alert, the unsent-age level, is one input: the ageing card.
// docs/contract.md has the table of which problem sets which level.
func Alert(d Data) string {
	level := AlertNone
	for _, it := range attention(d, waitingOf(d), nil) {
		switch it.Level {
		case levelCritical:
			return AlertCritical
		case levelWarn:
			level = AlertWarn
		}
	}
	return level
}

// waitingOf counts the entries that still have to reach the tax service.
func waitingOf(d Data) int {
	n := 0
	for _, s := range waitingStates {
		n += d.Counts[s]
	}
	return n
}
