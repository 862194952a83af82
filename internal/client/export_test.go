package client

// ReuseSupported tells the tests whether a create's connection is kept
// for the next create on this system.
const ReuseSupported = reuseSupported

// DecodeReceiptJSON is DecodeReceipt by encoding/json alone, the
// reference its scan must agree with.
var DecodeReceiptJSON = decodeReceiptJSON
