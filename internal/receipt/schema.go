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
}

// Enumerations of section 2.7. taxType accepts both spellings of the fourth
// value: the live service takes NO_VAT, the document also lists NOT_VAT.
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
func req(f field) field         { f.required = true; return f }
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
	req(str("name")),
	req(str("measureUnit")),
	req(num("qty")),
	req(num("unitPrice")),
	req(num("totalAmount")),
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
	req(num("totalAmount")),
	req(enum("taxType", taxTypes)),
	id("merchantTin"),
	req(arrayOf("items", object("", item))),
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
	req(str("terminalID")),
	req(str("rrn")),
	req(str("maskedCardNumber")),
	req(field{name: "easy", typ: tBool}),
	str("bankCode"),
}

// payment is Payment (2.5).
var payment = []field{
	req(enum("code", paymentCodes)),
	req(enum("status", paymentStatuses)),
	req(num("paidAmount")),
	str("exchangeCode"),
	func() field {
		f := object("data", paymentCardData)
		f.whenKey, f.whenValue = "code", "PAYMENT_CARD"
		return f
	}(),
}

// createRequest is the receipt creation request (2.1).
var createRequest = []field{
	id("branchNo"),
	req(num("totalAmount")),
	id("merchantTin"),
	id("posNo"),
	req(enum("type", receiptTypes)),
	id("billIdSuffix"),
	func() field {
		f := req(arrayOf("receipts", object("", subReceipt)))
		f.nonEmpty = true
		return f
	}(),
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

// checkObject validates obj (an object node) against fields: the present
// fields in document order, then the missing required ones. Recursion is
// bounded by the schema's depth, not the input's.
func checkObject(obj *node, path string, fields []field, p *problems) {
	for i, key := range obj.keys {
		f := lookup(fields, key)
		if f == nil || obj.vals[i].kind == kindNull && !f.required {
			continue // unknown fields are forwarded untouched; null = absent
		}
		if f.whenKey != "" {
			if w := obj.get(f.whenKey); w == nil || w.kind != kindString || w.text != f.whenValue {
				free := *f
				free.typ = tFreeObject
				f = &free
			}
		}
		checkValue(obj.vals[i], keyPath(path, key), f, p)
	}
	for i := range fields {
		if fields[i].required && obj.get(fields[i].name) == nil {
			p.add(keyPath(path, fields[i].name), "required")
		}
	}
}

func lookup(fields []field, name string) *field {
	for i := range fields {
		if fields[i].name == name {
			return &fields[i]
		}
	}
	return nil
}

// checkValue validates one value against its field description.
func checkValue(v *node, path string, f *field, p *problems) {
	if v.kind == kindNull && f.name != "" {
		p.add(path, "required")
		return
	}
	switch f.typ {
	case tString:
		if v.kind != kindString {
			p.add(path, "must be a string")
		} else if f.nonEmpty && v.text == "" {
			p.add(path, "must not be empty")
		} else if f.maxLen > 0 && len(v.text) > f.maxLen && utf8.RuneCountInString(v.text) > f.maxLen {
			p.add(path, "must be at most "+strconv.Itoa(f.maxLen)+" characters")
		}
	case tNumber:
		if v.kind != kindNumber {
			p.add(path, "must be a number")
		} else if problem := numberProblem(v.text); problem != "" {
			p.add(path, problem)
		}
	case tBool:
		if v.kind != kindBool {
			p.add(path, "must be true or false")
		}
	case tEnum:
		if v.kind != kindString || !contains(f.enum, v.text) {
			p.add(path, oneOf(f.enum))
		}
	case tFreeObject, tObject:
		if v.kind != kindObject {
			p.add(path, "must be an object")
		} else if f.typ == tObject {
			checkObject(v, path, f.obj, p)
		}
	case tArray:
		checkArray(v, path, f, p)
	}
}

func checkArray(v *node, path string, f *field, p *problems) {
	if v.kind != kindArray {
		p.add(path, "must be an array")
		return
	}
	if f.nonEmpty && len(v.vals) == 0 {
		p.add(path, "must not be empty")
	}
	for i, el := range v.vals {
		checkValue(el, indexPath(path, i), f.elem, p)
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
