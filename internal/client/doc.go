// Package client is the typed client of the whole tax service interface: the
// PosAPI receipt operations (create, delete, info, send data, bank accounts)
// and the public lookup API (district codes, product tax codes, merchant
// info, TIN info, the classification tree, an operator's merchant
// registration), and the excise stock API (goods by stamp QR id).
//
// It promises three things its callers build on:
//
//   - Numbers stay exact. A create request is sent with the caller's bytes
//     verbatim, and no response number is ever parsed into a float64
//     (json.Number and json.RawMessage are used instead).
//   - Every failure is an *Error with a Class saying what the caller may do:
//     NotSent (the request provably never left: safe to retry), Ambiguous
//     (the request was written, the answer was lost), Rejected (4xx other
//     than 408/429, or a body status ERROR) or Transient (5xx, 408, 429,
//     with the Retry-After the upstream asked for). The distinction between
//     NotSent and Ambiguous comes from net/http/httptrace (on a predialed or kept
//     connection, which the caller's goroutine writes itself, from that
//     write's own result), not from error strings.
//   - The client never retries by itself and never follows a redirect of a
//     non-GET request; retrying is the sync worker's decision.
//   - The two upstreams never share a transport. Which one a request goes
//     to is decided by its operation (Op.Lookup), not by its host: with
//     BaseURL and LookupBaseURL on the same host, a lookup still takes the
//     lookup transport (and Config.Proxy) and a receipt never does.
//
// Response bodies of create requests carry the lottery number and QR data,
// which must never be persisted or logged; the client neither stores nor
// logs anything.
package client
