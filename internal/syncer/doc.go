// Package syncer drains the receipt queue to the tax service. (It is not
// called sync so that it does not shadow the standard library's package.)
//
// The Worker owns every upstream send. It claims queued entries oldest
// first, sends up to Config.Concurrency of them at once, and records each
// outcome in the queue before it forgets the attempt. What it promises:
//
//   - An entry is marked sending (durably) before its request leaves, so a
//     crash mid-send is recovered as an ambiguous attempt, never lost.
//   - A rejected entry is finished and never blocks the entries behind it;
//     a transiently failing one waits out its own backoff while the rest go on.
//   - When the upstream cannot be reached the whole worker backs off
//     (cenkalti/backoff, jittered, capped at Config.MaxBackoff, never giving
//     up) and probes with one request at that pace; the first answer brings
//     it back to full concurrency.
//   - A receipt whose answer was lost (ambiguous: a timeout after sending,
//     a cut connection, a 2xx that is not JSON, SUCCESS or PAYMENT without
//     an id, an answer over upstream.max_answer) may have been issued. It
//     is sent again at most until it has Config.MaxAmbiguous ambiguous
//     attempts, then held for an operator, so a broken upstream cannot
//     issue one sale again and again.
//   - A 429 is an answer, not a failure: the upstream is up and asks for a
//     pause (its Retry-After, else a backoff step growing with each 429 in
//     a row), and until the pause ends nothing is sent, probes included.
//   - The upstream's answer, lottery number and QR data included, is handed
//     to a waiting POS through the Mailbox, in memory only, bounded by count, bytes and
//     time (MailboxConfig.AnswerTTL until a POS receives it, ResultTTL
//     after); it is never written to disk or to a log.
package syncer
