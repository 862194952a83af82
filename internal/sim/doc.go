// Package sim is a tax service simulator: every PosAPI and lookup route of
// the interface on one HTTP server, with realistic answers (33-digit ids,
// "SN ########" lottery numbers, QR data, PAYMENT for an unsettled PAY
// payment, ERROR for an invalid receipt), a record of everything it
// received, and faults injected on demand: down (connections refused),
// latency, a 5xx share, process-then-drop (the receipt is issued, then
// the connection is closed without an answer), the rejection of the
// next N receipts with a given message, a failing or slow sendData and a
// skewed clock (the Date header, receipt dates and lastSentDate).
//
// As PosAPI does, it hands out lottery numbers from a reserve
// (leftLotteries in /rest/info, Options.Lotteries) that each B2C receipt
// uses up and each sendData refills; a B2C receipt while the reserve is
// empty is refused with ReserveEmptyMessage and nothing is issued.
//
// Every answer carries every field the vendor's OpenAPI description of
// PosAPI 3.0 lists, in the live service's types (testdata/fields.txt pins
// them), and creates are validated as strictly as live staging is known to
// validate them: no payments, no VAT on a VAT_ABLE receipt or no district
// code is an ERROR.
//
// It is a test tool: it keeps lottery numbers and QR data in memory and
// shows them on its own API under /sim/. Randomness comes from
// Options.Seed, so a run is reproducible given the same requests in the
// same order. A Sim is safe for concurrent use. It imports nothing of
// receiptd's.
package sim
