package receipt

import (
	"strconv"
	"unicode/utf8"
)

// ftype is what the interface document says a field holds.
type ftype uint8

const (
	tString ftype = iota + 1
	tNumber
	tBool
	tFreeObject // free-form JSON object: only its type is checked
	tObject     // object with its own schema
	tArray
	tEnum
)

// field describes one field of an object in the interface (section 2).
type field struct {
	name     string
	typ      ftype
	required bool
	nonEmpty bool     // strings: must not be ""; arrays: at least one element
	maxLen   int      // strings: at most this many characters; 0: no bound
	enum     []string // tEnum
	obj      []field  // tObject
	elem     *field   // tArray: the type of every element (name unused)
	// whenKey, whenValue: obj applies only when the sibling string field
	// whenKey holds whenValue; otherwise the value is a free-form object.
	whenKey, whenValue string
	// rules are the tax service's rules about this field (rules.go),
	// attached at init; they run on a value of the right type, or on nil
	// when the field is absent or null.
	rules []*Rule
}

// Enumerations of section 2.7. taxType accepts both spellings of the fourth
// value: the live service takes NO_VAT, the document also lists NOT_VAT.
// The schema checks only that they are strings; membership is a rule
// (rules.go), which accept.skip_rules can switch off when the tax service
// adds a value.
var (
	receiptTypes    = []string{"B2C_RECEIPT", "B2B_RECEIPT", "B2C_INVOICE", "B2B_INVOICE"}
	taxTypes        = []string{"VAT_ABLE", "VAT_FREE", "VAT_ZERO", "NO_VAT", "NOT_VAT"}
	barCodeTypes    = []string{"GS1", "ISBN", "UNDEFINED"}
	paymentCodes    = []string{"CASH", "PAYMENT_CARD"}
	paymentStatuses = []string{"PAID", "PAY", "REVERSED", "ERROR"}
)

// MaxKeyField bounds identifier fields (merchantTin, posNo, billIdSuffix,
// branchNo, districtCode, customer ids, a delete's id and date), in
// characters. The live values are a few to a few dozen characters; the
// bound keeps the idempotency key and the queue's indexes far below
// bbolt's key size limit, so an oversized field is a 400 naming it, never
// a failed store.
const MaxKeyField = 128

func str(name string) field     { return field{name: name, typ: tString} }
func key(name string) field     { return field{name: name, typ: tString, maxLen: MaxKeyField} }
func num(name string) field     { return field{name: name, typ: tNumber} }
func freeObj(name string) field { return field{name: name, typ: tFreeObject} }
func id(name string) field {
	return field{name: name, typ: tString, required: true, nonEmpty: true, maxLen: MaxKeyField}
}
func enum(name string, values []string) field {
	return field{name: name, typ: tEnum, enum: values}
}
func arrayOf(name string, elem field) field {
	return field{name: name, typ: tArray, elem: &elem}
}
func object(name string, fields []field) field {
	return field{name: name, typ: tObject, obj: fields}
}

// itemData is ReceiptItemData (2.4).
var itemData = []field{
	str("lotNo"),
	arrayOf("stockQR", field{typ: tString}),
}

// item is Item (2.4).
var item = []field{
	str("name"),
	str("measureUnit"),
	num("qty"),
	num("unitPrice"),
	num("totalAmount"),
	str("barCode"),
	enum("barCodeType", barCodeTypes),
	str("classificationCode"),
	str("taxProductCode"),
	num("totalVAT"),
	num("totalCityTax"),
	object("data", itemData),
}

// subReceipt is SubReceipt (2.3).
var subReceipt = []field{
	num("totalAmount"),
	enum("taxType", taxTypes),
	key("merchantTin"),
	arrayOf("items", object("", item)),
	num("totalVAT"),
	num("totalCityTax"),
	key("customerTin"),
	key("bankAccountNo"),
	key("iBan"),
	key("invoiceId"),
	freeObj("data"),
}

// paymentCardData is PaymentCardData (2.5), "used when code is
// PAYMENT_CARD": checked for card payments only. A cash payment's data
// object (some POS programs always write one) is forwarded unchecked.
var paymentCardData = []field{
	str("terminalID"),
	str("rrn"),
	str("maskedCardNumber"),
	{name: "easy", typ: tBool},
	str("bankCode"),
}

// payment is Payment (2.5).
var payment = []field{
	enum("code", paymentCodes),
	enum("status", paymentStatuses),
	num("paidAmount"),
	str("exchangeCode"),
	func() field {
		f := object("data", paymentCardData)
		f.whenKey, f.whenValue = "code", "PAYMENT_CARD"
		return f
	}(),
}

// createRequest is the receipt creation request (2.1): the types of its
// fields. What must be present, and the values the tax service takes,
// are the rules (rules.go).
var createRequest = []field{
	key("branchNo"),
	num("totalAmount"),
	key("merchantTin"),
	key("posNo"),
	enum("type", receiptTypes),
	key("billIdSuffix"),
	arrayOf("receipts", object("", subReceipt)),
	num("totalVAT"),
	num("totalCityTax"),
	key("districtCode"),
	key("customerTin"),
	key("consumerNo"),
	key("inactiveId"),
	key("invoiceId"),
	key("reportMonth"),
	freeObj("data"),
	arrayOf("payments", object("", payment)),
}

// deleteRequest is the receipt deletion request (2.6); the date format is
// checked separately.
var deleteRequest = []field{
	id("id"),
	key("date"),
}

// checker validates a tree against the schema and the rules rs applies,
// collecting problems. trail is where it is in the tree; only a problem
// turns it into a path. objs are the objects that hold the value being
// checked, the top-level one first.
type checker struct {
	problems
	trail []step
	objs  []*node
	rs    *Rules
}

// check validates root, the top-level object, against fields and the
// rules of rs attached to them.
func check(root *node, fields []field, rs *Rules) problems {
	var steps [8]step
	var objs [4]*node
	c := checker{trail: steps[:0], objs: objs[:0], rs: rs}
	c.checkObject(root, fields)
	return c.problems
}

// step is one level of a path: an object member's key, or an array index.
type step struct {
	key   string
	index int // -1: the member key
}

func (c *checker) down(s step) { c.trail = append(c.trail, s) }
func (c *checker) up()         { c.trail = c.trail[:len(c.trail)-1] }

// problem adds a problem with the value the trail leads to, its path
// rendered as FieldError.Field: "receipts[0].items[2].qty".
func (c *checker) problem(text string) {
	path := ""
	for _, s := range c.trail {
		if s.index < 0 {
			path = keyPath(path, s.key)
		} else {
			path = indexPath(path, s.index)
		}
	}
	c.add(path, text)
}

// checkObject validates obj (an object node) against fields: the present
// fields in document order, then the missing ones. Recursion is bounded by
// the schema's depth, not the input's.
func (c *checker) checkObject(obj *node, fields []field) {
	c.objs = append(c.objs, obj)
	defer func() { c.objs = c.objs[:len(c.objs)-1] }()
	// seen: fields[i] is present when bit i is set. Every object of the
	// schema has fewer than 64 fields (TestSchemaFieldsAreUniqueAndFew).
	var seen uint64
	next := 0 // where the next key's search starts
	for i, key := range obj.keys {
		v := &obj.vals[i]
		fi := lookupFrom(fields, key, next)
		if fi < 0 {
			continue // unknown fields are forwarded untouched
		}
		next = fi + 1
		f := &fields[fi]
		seen |= 1 << fi
		c.down(step{key: key, index: -1})
		switch {
		case v.kind == kindNull && f.required:
			c.problem("required")
		case v.kind == kindNull:
			c.apply(f, nil) // null = absent
		case c.checkValue(v, c.when(obj, f)):
			c.apply(f, v)
		}
		c.up()
	}
	for i := range fields {
		if seen&(1<<i) != 0 {
			continue // present: checked above
		}
		c.down(step{key: fields[i].name, index: -1})
		if fields[i].required {
			c.problem("required")
		} else {
			c.apply(&fields[i], nil)
		}
		c.up()
	}
}

// when is f, or f as a free-form object when f's schema applies only for
// a sibling's value that obj does not hold.
func (c *checker) when(obj *node, f *field) *field {
	if f.whenKey == "" {
		return f
	}
	if w := obj.get(f.whenKey); w == nil || w.kind != kindString || w.text != f.whenValue {
		free := *f
		free.typ = tFreeObject
		return &free
	}
	return f
}

// apply runs the rules of f that c applies on v (nil: absent or null).
func (c *checker) apply(f *field, v *node) {
	for _, r := range f.rules {
		if !c.rs.on(r) {
			continue
		}
		if problem := r.check(v, c.objs); problem != "" {
			c.problem(problem)
		}
	}
}

// lookup returns the index of the field called name, or -1.
func lookup(fields []field, name string) int { return lookupFrom(fields, name, 0) }

// lookupFrom is lookup searching from fields[from] on, then from the
// start: a POS writes an object's fields in one order, most often the
// interface's, so the field after the last one found is usually the next.
func lookupFrom(fields []field, name string, from int) int {
	for i := from; i < len(fields); i++ {
		if fields[i].name == name {
			return i
		}
	}
	for i := range min(from, len(fields)) {
		if fields[i].name == name {
			return i
		}
	}
	return -1
}

// checkValue validates one value against its field description and
// reports whether its type was right (so that the rules may look at it).
func (c *checker) checkValue(v *node, f *field) bool {
	n := len(c.list) + c.dropped
	switch f.typ {
	case tString:
		if v.kind != kindString {
			c.problem("must be a string")
		} else if f.nonEmpty && v.text == "" {
			c.problem("must not be empty")
		} else if f.maxLen > 0 && len(v.text) > f.maxLen && utf8.RuneCountInString(v.text) > f.maxLen {
			c.problem("must be at most " + strconv.Itoa(f.maxLen) + " characters")
		}
	case tNumber:
		if v.kind != kindNumber {
			c.problem("must be a number")
		} else if problem := numberProblem(v.text); problem != "" {
			c.problem(problem)
		}
	case tBool:
		if v.kind != kindBool {
			c.problem("must be true or false")
		}
	case tEnum:
		if v.kind != kindString {
			c.problem(oneOf(f.enum))
		}
	case tFreeObject, tObject:
		if v.kind != kindObject {
			c.problem("must be an object")
		} else if f.typ == tObject {
			c.checkObject(v, f.obj)
		}
	case tArray:
		c.checkArray(v, f)
	}
	return len(c.list)+c.dropped == n
}

func (c *checker) checkArray(v *node, f *field) {
	if v.kind != kindArray {
		c.problem("must be an array")
		return
	}
	if f.nonEmpty && len(v.vals) == 0 {
		c.problem("must not be empty")
	}
	for i := range v.vals {
		c.down(step{index: i})
		c.checkValue(&v.vals[i], f.elem)
		c.up()
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
