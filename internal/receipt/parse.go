package receipt

import (
	"time"
)

// Create is what receiptd itself needs from a valid receipt creation
// request. The request is forwarded as the raw bytes, never rebuilt from
// this struct.
type Create struct {
	MerchantTin  string
	PosNo        string
	BillIDSuffix string
	BranchNo     string
	Type         string // one of the ReceiptType values
	CustomerTin  string // "" when absent; a customer identifier: mask in logs
	ConsumerNo   string // "" when absent; a customer identifier: mask in logs
	// TINs is every distinct merchantTin in the receipt (top level first,
	// then the sub-receipts in order), for warming the lookup cache.
	TINs []string
	// Fingerprint is Fingerprint(body), taken while parsing.
	Fingerprint string
}

// ParseCreate validates a POST /rest/receipt body against the interface
// (sections 2.1 to 2.5 and 2.7, with the rules in the package comment)
// and every rule of the tax service's (AllRules). Any refusal is a
// *ValidationError listing every problem found.
func ParseCreate(body []byte) (*Create, error) { return parseCreate(body, nil) }

func parseCreate(body []byte, rs *Rules) (*Create, error) {
	w := getWalker()
	defer w.release()
	root, err := w.parse(body)
	if err != nil {
		return nil, err
	}
	p := check(root, createRequest, rs)
	if err := p.err(); err != nil {
		return nil, err
	}
	c := &Create{
		MerchantTin:  text(root, "merchantTin"),
		PosNo:        text(root, "posNo"),
		BillIDSuffix: text(root, "billIdSuffix"),
		BranchNo:     text(root, "branchNo"),
		Type:         text(root, "type"),
		CustomerTin:  text(root, "customerTin"),
		ConsumerNo:   text(root, "consumerNo"),
		Fingerprint:  fingerprint(body, w.spaced),
	}
	c.TINs = append(c.TINs, c.MerchantTin)
	subs := root.get("receipts").vals
	for i := range subs {
		if tin := text(&subs[i], "merchantTin"); tin != "" && !contains(c.TINs, tin) {
			c.TINs = append(c.TINs, tin)
		}
	}
	return c, nil
}

// Delete is a valid DELETE /rest/receipt body.
type Delete struct {
	// ID is a queueId or an upstream receipt id; never empty.
	ID string
	// Date is "" when absent, else as the POS wrote it: "yyyy-MM-dd
	// HH:mm:ss" or ISO 8601 (see dateLayouts).
	Date string
}

// dateLayouts are the accepted forms of a delete request's date: the
// upstream's own "yyyy-MM-dd HH:mm:ss" and the common ISO 8601 forms.
var dateLayouts = []string{
	"2006-01-02 15:04:05",
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
}

// ParseDelete validates a DELETE /rest/receipt body: {"id": required
// non-empty string, "date": optional string in "yyyy-MM-dd HH:mm:ss" or
// ISO 8601}. Unknown fields are allowed. Refusals are *ValidationError.
func ParseDelete(body []byte) (*Delete, error) {
	w := getWalker()
	defer w.release()
	root, err := w.parse(body)
	if err != nil {
		return nil, err
	}
	p := check(root, deleteRequest, nil)
	date := root.get("date")
	if date != nil && date.kind == kindString && !validDate(date.text) {
		p.add("date", `must be a date like "2024-01-31 15:04:05" or ISO 8601 "2024-01-31T15:04:05+08:00"`)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return &Delete{ID: text(root, "id"), Date: text(root, "date")}, nil
}

func validDate(s string) bool {
	for _, layout := range dateLayouts {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// text returns the string value of key in obj, or "" when absent or null.
func text(obj *node, key string) string {
	if v := obj.get(key); v != nil && v.kind == kindString {
		return v.text
	}
	return ""
}
