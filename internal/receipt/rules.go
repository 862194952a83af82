package receipt

import (
	"fmt"
	"strings"
)

// Rule is one refusal of the tax service's that receiptd makes at the till,
// before a receipt is stored: a receipt the tax service would refuse hours
// later, after the customer has left, is refused at once with 400 naming
// the field. The types of the fields (a string, a number, an object) are
// the schema's (schema.go) and are always checked; a Rule is what the
// tax service demands on top of them.
type Rule struct {
	// Name is stable: accept.skip_rules names it to switch the rule off.
	Name string
	// Path is the field the rule is about, "receipts[].items[].qty";
	// FieldError.Field is that path with the indexes filled in.
	Path string
	// Check says what is demanded, for the table in docs/pos-integration.md.
	Check string
	// Problem is what the POS reads in FieldError.Problem when it fails.
	Problem string
	// Source says whose word the rule is: the vendor's description of
	// PosAPI 3.0, the live service (field notes), or both; where they
	// disagree the live service wins and Source says so.
	Source string
	// Evidence is where it is written down: each Cite is a quote of a file
	// under docs/reference.
	Evidence []Cite
	// Fixed, when set, says why the rule cannot be skipped: receiptd needs
	// the field itself.
	Fixed string

	index int
	// check returns "" when v passes, else the problem. v is the field's
	// value, nil when it is absent or null; objs are the objects that hold
	// it, the top-level object first and v's own object last.
	check func(v *node, objs []*node) string
}

// Cite is a quote of one of the reference files under docs/reference.
type Cite struct {
	File  string // "posapi-3.0-fields.md", "field-notes.md", ...
	Quote string // text that file holds word for word
}

// Waiver is something the vendor's description demands that receiptd
// does not refuse, because the live service is known to take it.
type Waiver struct {
	Path     string
	Demand   string // what the description says
	Why      string // what the world does instead
	Evidence []Cite
}

// Where the rules' evidence lives, under docs/reference.
const (
	fieldsFile = "posapi-3.0-fields.md"
	notesFile  = "field-notes.md"
	ifaceFile  = "tax-receipt-service-interface.md"
)

// Sources of a rule: the vendor's description alone, the description and
// the live service agreeing, or the live service where the description
// says otherwise (it wins).
const (
	SourceDescription = "description"
	SourceBoth        = "description and world"
	SourceWorldWins   = "world, over the description"
)

// fixedKey is why merchantTin, posNo and billIdSuffix cannot be skipped.
const fixedKey = "receiptd derives the idempotency key from it"

// rules is the table: every refusal receiptd makes for the tax service.
// The order is the table's in docs/pos-integration.md.
var rules = []*Rule{
	present("branchNo", true, desc("- `branchNo`*: string")),
	present("totalAmount", false, desc("- `totalAmount`*: number")),
	fixed(present("merchantTin", true, desc("- `merchantTin`*: string"))),
	fixed(present("posNo", true, desc("- `posNo`*: string"))),
	present("type", false, desc("- `type`*: string")),
	oneOfRule("type", receiptTypes, SourceDescription, iface("| ReceiptType | B2C_RECEIPT, B2B_RECEIPT, B2C_INVOICE, B2B_INVOICE |")),
	fixed(present("billIdSuffix", true, desc("- `billIdSuffix`*: string"))),
	present("receipts", true, desc("- `receipts`*: array")),
	{
		Name: "districtCode.required", Path: "districtCode", Check: "present, not empty",
		Problem: "required: the tax service refuses a receipt without it", Source: SourceWorldWins,
		Evidence: []Cite{desc("- `districtCode`: string"), notes("without `districtCode`")},
		check:    needs(nil, "required: the tax service refuses a receipt without it"),
	},
	{
		Name: "districtCode.format", Path: "districtCode", Check: "4 digits",
		Problem: `must be 4 digits, branchCode and subBranchCode, like "0102"`, Source: SourceBoth,
		Evidence: []Cite{notes("a 4-digit whole number"), notes("District code = `branchCode` + `subBranchCode`, e.g. `0102`.")},
		check:    districtFormat,
	},
	{
		Name: "payments.required", Path: "payments", Check: "present, at least one payment",
		Problem: "required: the tax service refuses a receipt without payments", Source: SourceWorldWins,
		Evidence: []Cite{desc("- `payments`: array"), notes("without `payments`")},
		check:    needs(nil, "required: the tax service refuses a receipt without payments"),
	},
	{
		Name: "totalVAT.vatable", Path: "totalVAT", Check: "a number (or `totalVat`) when a sub-receipt is VAT_ABLE",
		Problem: vatProblem, Source: SourceWorldWins,
		Evidence: []Cite{desc("- `totalVAT`: ['number', 'null']"), notes("without `totalVAT` on a `VAT_ABLE` receipt")},
		check:    vat(anyVATable),
	},
	{
		Name: "customerTin.b2b", Path: "customerTin", Check: "present, not empty, for B2B_RECEIPT and B2B_INVOICE",
		Problem: b2bProblem, Source: SourceDescription,
		Evidence: []Cite{notes("`customerTin` is the buyer's TIN, filled only for `B2B_RECEIPT` and `B2B_INVOICE`")},
		check:    needs(isB2B, b2bProblem),
	},
	{
		Name: "reportMonth.b2b", Path: "reportMonth", Check: "empty unless the type is B2B_RECEIPT or B2B_INVOICE",
		Problem: "only for B2B_RECEIPT and B2B_INVOICE", Source: SourceBoth,
		Evidence: []Cite{notes("`reportMonth` is only for B2B types")},
		check:    reportMonthB2B,
	},
	present("receipts[].totalAmount", false, desc("  - `totalAmount`*: number")),
	present("receipts[].taxType", false, desc("  - `taxType`*: string")),
	oneOfRule("receipts[].taxType", taxTypes, SourceWorldWins, notes("Accept both from the POS")),
	present("receipts[].merchantTin", true, desc("  - `merchantTin`*: string")),
	withCite(present("receipts[].items", true, desc("  - `items`*: array")), notes("A sub-receipt's `items` must not be empty")),
	{
		Name: "receipts.totalVAT.vatable", Path: "receipts[].totalVAT", Check: "a number (or `totalVat`) when its taxType is VAT_ABLE",
		Problem: vatProblem, Source: SourceWorldWins,
		Evidence: []Cite{desc("  - `totalVAT`: ['number', 'null']"), notes("without `totalVAT` on a `VAT_ABLE` receipt")},
		check:    vat(ownVATable),
	},
	present("receipts[].items[].name", false, desc("    - `name`*: string")),
	present("receipts[].items[].measureUnit", false, desc("    - `measureUnit`*: string")),
	present("receipts[].items[].qty", false, desc("    - `qty`*: number")),
	present("receipts[].items[].unitPrice", false, desc("    - `unitPrice`*: number")),
	present("receipts[].items[].totalAmount", false, desc("    - `totalAmount`*: number")),
	oneOfRule("receipts[].items[].barCodeType", barCodeTypes, SourceDescription, iface("| BarCodeType | GS1, ISBN, UNDEFINED |")),
	{
		Name: "receipts.items.taxProductCode.exempt", Path: "receipts[].items[].taxProductCode",
		Check:   "present, not empty, when its sub-receipt's taxType is VAT_FREE or VAT_ZERO",
		Problem: exemptProblem, Source: SourceDescription,
		Evidence: []Cite{notes("`taxProductCode` is entered when `taxType` is `VAT_FREE` or `VAT_ZERO`")},
		check:    needs(exempt, exemptProblem),
	},
	present("payments[].code", false, desc("  - `code`*: string")),
	oneOfRule("payments[].code", paymentCodes, SourceDescription, iface("| PaymentCode | CASH, PAYMENT_CARD |")),
	present("payments[].status", false, desc("  - `status`*: string")),
	oneOfRule("payments[].status", paymentStatuses, SourceDescription, iface("| PaymentStatus | PAID, PAY, REVERSED, ERROR |")),
	present("payments[].paidAmount", false, desc("  - `paidAmount`*: number")),
	cardData(present("payments[].data.terminalID", false, desc("    - `terminalID`*: string"))),
	cardData(present("payments[].data.rrn", false, desc("    - `rrn`*: string"))),
	cardData(present("payments[].data.maskedCardNumber", false, desc("    - `maskedCardNumber`*: string"))),
	cardData(present("payments[].data.easy", false, desc("    - `easy`*: boolean"))),
}

// waivers are what the description demands and receiptd does not refuse.
var waivers = []Waiver{
	{
		Path: "receipts[].items[].barCode", Demand: "required",
		Why: "the description's own examples send null with barCodeType UNDEFINED, the Go client sends \"\"; " +
			"an item without a barcode is taken",
		Evidence: []Cite{desc("    - `barCode`*: string"), notes("`barCode` is sent as null or \"\" with `barCodeType` `UNDEFINED`")},
	},
	{
		Path: "payments[].data", Demand: "required on every payment",
		Why: "it is card data, for PAYMENT_CARD only, and the Go client sends a card payment without it; " +
			"when a card payment has it, its fields are checked",
		Evidence: []Cite{desc("  - `data`*: object"), iface("PaymentCardData is used when code is PAYMENT_CARD")},
	},
}

func desc(line string) Cite  { return Cite{File: fieldsFile, Quote: line} }
func notes(text string) Cite { return Cite{File: notesFile, Quote: text} }
func iface(text string) Cite { return Cite{File: ifaceFile, Quote: text} }

func fixed(r *Rule) *Rule { r.Fixed = fixedKey; return r }

func withCite(r *Rule, c Cite) *Rule { r.Evidence = append(r.Evidence, c); return r }

// cardData is a field of PaymentCardData, checked only in the data of a
// PAYMENT_CARD payment (schema.go's whenKey).
func cardData(r *Rule) *Rule { r.Check = "present in the data of a PAYMENT_CARD payment"; return r }

// nameOf is a rule's name: its path without the "[]", then what it checks.
func nameOf(path, what string) string { return strings.ReplaceAll(path, "[]", "") + "." + what }

// present is a field the description requires; nonEmpty also refuses ""
// and [] (a receipt without the ids, or without a sub-receipt or an item,
// cannot be issued).
func present(path string, nonEmpty bool, evidence Cite) *Rule {
	r := &Rule{Name: nameOf(path, "required"), Path: path, Check: "present",
		Problem: "required", Source: SourceDescription, Evidence: []Cite{evidence}}
	if nonEmpty {
		r.Check, r.Problem = "present, not empty", "required; must not be empty"
		r.check = needs(nil, "required")
		return r
	}
	r.check = func(v *node, _ []*node) string {
		if v == nil {
			return "required"
		}
		return ""
	}
	return r
}

// needs refuses an absent, null, "" or [] value when cond holds (nil: always).
func needs(cond func(objs []*node) bool, problem string) func(*node, []*node) string {
	return func(v *node, objs []*node) string {
		switch {
		case cond != nil && !cond(objs):
			return ""
		case v == nil:
			return problem
		case v.kind == kindString && v.text == "", v.kind == kindArray && len(v.vals) == 0:
			if problem == "required" {
				return "must not be empty"
			}
			return problem
		}
		return ""
	}
}

func oneOfRule(path string, values []string, source string, evidence Cite) *Rule {
	problem := oneOf(values)
	return &Rule{Name: nameOf(path, "enum"), Path: path, Check: "one of " + strings.Join(values, ", "),
		Problem: problem, Source: source, Evidence: []Cite{evidence},
		check: func(v *node, _ []*node) string {
			if v != nil && !contains(values, v.text) {
				return problem
			}
			return ""
		}}
}

func districtFormat(v *node, _ []*node) string {
	if v == nil || v.text == "" {
		return "" // districtCode.required says so
	}
	if len(v.text) != 4 || strings.IndexFunc(v.text, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return `must be 4 digits, branchCode and subBranchCode, like "0102"`
	}
	return ""
}

const (
	vatProblem    = "required with taxType VAT_ABLE: a number (totalVat also counts)"
	b2bProblem    = "required for B2B_RECEIPT and B2B_INVOICE: the buyer's TIN"
	exemptProblem = "required with taxType VAT_FREE and VAT_ZERO: the product's tax code"
)

// vat passes a number in totalVAT or in totalVat, the spelling some
// integrators report from production, when cond holds. The object
// holding the field is the last of objs.
func vat(cond func(objs []*node) bool) func(*node, []*node) string {
	return func(v *node, objs []*node) string {
		if !cond(objs) || v != nil {
			return "" // the schema has checked that a present totalVAT is a number
		}
		if alt := objs[len(objs)-1].get("totalVat"); alt != nil && alt.kind == kindNumber {
			return ""
		}
		return vatProblem
	}
}

func textOf(obj *node, key string) string {
	if v := obj.get(key); v != nil && v.kind == kindString {
		return v.text
	}
	return ""
}

func ownVATable(objs []*node) bool { return textOf(objs[len(objs)-1], "taxType") == "VAT_ABLE" }

func anyVATable(objs []*node) bool {
	subs := objs[0].get("receipts")
	if subs == nil || subs.kind != kindArray {
		return false
	}
	for i := range subs.vals {
		if s := &subs.vals[i]; s.kind == kindObject && textOf(s, "taxType") == "VAT_ABLE" {
			return true
		}
	}
	return false
}

func isB2B(objs []*node) bool {
	t := textOf(objs[0], "type")
	return t == "B2B_RECEIPT" || t == "B2B_INVOICE"
}

// exempt: the item's sub-receipt (the object before the item's) is
// VAT_FREE or VAT_ZERO.
func exempt(objs []*node) bool {
	if len(objs) < 2 {
		return false
	}
	t := textOf(objs[len(objs)-2], "taxType")
	return t == "VAT_FREE" || t == "VAT_ZERO"
}

func reportMonthB2B(v *node, objs []*node) string {
	if v == nil || v.text == "" || isB2B(objs) {
		return ""
	}
	return "only for B2B_RECEIPT and B2B_INVOICE"
}

// AllRules returns the table, in its order. The Rules are shared: do not
// change them.
func AllRules() []*Rule { return rules }

// Waivers returns what the description demands and receiptd does not refuse.
func Waivers() []Waiver { return waivers }

// Rules is the set of rules a parse applies. The zero value and nil apply
// every rule.
type Rules struct {
	off []bool // by Rule.index
}

// NewRules returns every rule but those named in skip (accept.skip_rules).
// An unknown name, or a rule receiptd needs itself, is an error naming it.
func NewRules(skip []string) (*Rules, error) {
	rs := &Rules{off: make([]bool, len(rules))}
	for _, name := range skip {
		r := ruleNamed(name)
		switch {
		case r == nil:
			return nil, fmt.Errorf("unknown rule %q (the rules are listed in docs/pos-integration.md)", name)
		case r.Fixed != "":
			return nil, fmt.Errorf("rule %q cannot be skipped: %s", name, r.Fixed)
		}
		rs.off[r.index] = true
	}
	return rs, nil
}

func ruleNamed(name string) *Rule {
	for _, r := range rules {
		if r.Name == name {
			return r
		}
	}
	return nil
}

func (rs *Rules) on(r *Rule) bool { return rs == nil || len(rs.off) == 0 || !rs.off[r.index] }

// ParseCreate is the package's ParseCreate with rs's rules.
func (rs *Rules) ParseCreate(body []byte) (*Create, error) { return parseCreate(body, rs) }

func init() {
	for i, r := range rules {
		r.index = i
		f := fieldAt(createRequest, r.Path)
		if f == nil {
			panic("receipt: rule " + r.Name + " names " + r.Path + ", not a field of the schema")
		}
		f.rules = append(f.rules, r)
	}
}

// fieldAt finds the schema field at path ("receipts[].items[].qty").
func fieldAt(fields []field, path string) *field {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		fi := lookup(fields, strings.TrimSuffix(p, "[]"))
		if fi < 0 {
			return nil
		}
		f := &fields[fi]
		if i == len(parts)-1 {
			return f
		}
		if f.typ == tArray {
			f = f.elem
		}
		fields = f.obj
	}
	return nil
}
