package syncer

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/queue"
)

// outcomeOf keeps what may be stored of an upstream answer: never the
// lottery number or the QR data.
func outcomeOf(r *client.Receipt) *queue.Outcome {
	o := &queue.Outcome{
		Status: r.Status, ID: r.ID, Date: r.Date, PosID: r.PosID.String(),
		Message: r.Message, HTTPStatus: r.HTTPStatus,
	}
	for _, s := range r.SubReceipts {
		o.SubReceipts = append(o.SubReceipts, queue.SubReceipt{ID: s.ID, BankAccountID: s.BankAccountID})
	}
	return o
}

// rejectedOutcome is what is kept of a rejection, whatever shape its body
// has (PosAPI's, another JSON error, a proxy's HTML page): status ERROR, a
// message and the HTTP status, so an operator always sees why.
func rejectedOutcome(ce *client.Error) *queue.Outcome {
	return &queue.Outcome{Status: client.StatusError, Message: rejectMessage(ce.StatusCode, ce.Message, ce.Body), HTTPStatus: ce.StatusCode}
}

// rejectMessage is the upstream's message when it gave one, else the HTTP
// status and a short excerpt of the body. The client falls back to the
// status text when a body has no message, so that text counts as none.
func rejectMessage(code int, msg string, body []byte) string {
	if m := strings.TrimSpace(msg); m != "" && m != http.StatusText(code) {
		return msg
	}
	out := fmt.Sprintf("HTTP %d", code)
	if text := http.StatusText(code); text != "" {
		out += " " + text
	}
	if ex := bodyExcerpt(body); ex != "" {
		out += ": " + ex
	}
	return out
}

// excerptMax bounds a body excerpt, in characters.
const excerptMax = 160

// neverKept are names whose values must never reach the disk or a log
// (lottery and QR data; customer identifiers are masked in logs). A body
// that mentions one gives no excerpt: an excerpt cannot tell where their
// values end.
var neverKept = []string{"lottery", "qrdata", "customertin", "consumerno"}

// bodyExcerpt is the start of a body as printable text for an outcome's
// message and the log: an HTML page's tags are dropped, invalid UTF-8,
// control and other unprintable characters become spaces, runs of space
// one space, and it ends after excerptMax characters with "…".
func bodyExcerpt(body []byte) string {
	lower := bytes.ToLower(body)
	for _, name := range neverKept {
		if bytes.Contains(lower, []byte(name)) {
			return "(body not kept: it names fields whose values are never stored)"
		}
	}
	html := bytes.HasPrefix(bytes.TrimSpace(body), []byte("<"))
	var out []rune
	inTag, space := false, false
	// One character past the bound shows that there is more.
	for len(body) > 0 && len(out) <= excerptMax {
		r, size := utf8.DecodeRune(body)
		body = body[size:]
		switch {
		case html && inTag:
			inTag = r != '>'
			space = space || !inTag // <p>a</p><p>b</p> reads "a b"
			continue
		case html && r == '<':
			inTag = true
			continue
		case r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r):
			space = true
			continue
		}
		if space && len(out) > 0 {
			out = append(out, ' ')
		}
		space = false
		out = append(out, r)
	}
	if len(out) > excerptMax {
		return strings.TrimRight(string(out[:excerptMax]), " ") + "…"
	}
	return string(out)
}

// notFoundAnswer reports whether a rejected delete's answer says that the
// tax service does not know the receipt. The simulator answers HTTP 400
// {"status":"ERROR","message":"receipt <id> not found"}; PosAPI's wording
// is not documented. So the match is loose in form and narrow in sense:
// "not found" in any letter case, with any spaces, "_" or "-" between the
// words or none ("NotFound"), but only in the upstream's own message (not
// the status text the client puts in for a bare 404 page), only with HTTP
// 200 (a body status ERROR), 400 or 404, and only when the message also
// names the receipt: its id, or the word "receipt". "merchant not found"
// does not match.
func notFoundAnswer(ce *client.Error, id string) bool {
	switch ce.StatusCode {
	case http.StatusOK, http.StatusBadRequest, http.StatusNotFound:
	default:
		return false
	}
	if strings.TrimSpace(ce.Message) == http.StatusText(ce.StatusCode) {
		return false
	}
	m := words(ce.Message)
	if !strings.Contains(m, "not found") && !strings.Contains(m, "notfound") {
		return false
	}
	id = words(id)
	return strings.Contains(m, "receipt") || (id != "" && strings.Contains(m, id))
}

// words is s in lower case with each run of spaces, "_" and "-" one space.
func words(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return unicode.IsSpace(r) || r == '_' || r == '-'
	}), " ")
}
