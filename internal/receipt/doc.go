// Package receipt owns the request bodies that POS software sends to
// POST and DELETE /rest/receipt: their validation against the tax service
// interface, the default idempotency key and the body fingerprint.
//
// It promises that
//   - bad input gets field-level errors ([ValidationError]) phrased for a POS
//     developer, every problem listed in document order (up to [MaxProblems]);
//   - nothing is ever re-encoded: a body that passes validation is meant to
//     be forwarded upstream byte for byte, numbers exactly as written and
//     unknown fields untouched;
//   - numbers are never parsed into binary floats; their range is checked
//     on the literal text (see [MaxIntDigits] and [MaxFracDigits]);
//   - parsing never recurses over the input, so a hostile body (deep
//     nesting, huge exponents) costs time linear in its size.
//
// Rules decided here where the interface document is silent:
//   - The body must be valid UTF-8, exactly one JSON object, with nothing but
//     whitespace after it, nested at most [MaxDepth] containers deep.
//   - Duplicate keys in any object (including free-form data) are refused:
//     we forward the raw bytes, and the upstream's parser might keep the
//     other copy than the one we validated.
//   - An optional field set to null counts as absent; a required field set
//     to null is "required".
//   - Unknown fields are allowed at every level and are not checked.
//   - Every field the interface types as Number must be a JSON number token
//     (a string "12.5" is refused) whose exact decimal value is below 1e15
//     in magnitude and has at most 18 digits after the decimal point once
//     trailing zeros are dropped. Negative values are allowed (returns).
//     Numbers inside free-form data objects are not range-checked.
//   - The required ids merchantTin (top level and in every sub-receipt),
//     posNo, billIdSuffix and branchNo must be non-empty strings, and
//     receipts must hold at least one sub-receipt.
//
// What must be present, the enumerations' values and what the tax service
// is known to refuse besides are the rules of rules.go: one table, each
// rule named, with the field, the check, the problem and the evidence in
// docs/reference; docs/pos-integration.md's table is generated from it.
// [Rules] applies all of them but those accept.skip_rules names (never
// merchantTin, posNo and billIdSuffix, which the idempotency key needs).
// The schema's types are always checked; a rule sees only a value of the
// right type, and problems keep document order (an object's missing
// fields after its present ones).
package receipt
