// Package api owns receiptd's local HTTP API: the routes POS software and
// operators use (docs/contract.md, "Local API"), and the security rules that keep
// that localhost surface safe from browsers and other programs.
//
// # Promises
//
//   - Every 2xx answer to POST or DELETE /rest/receipt comes after the entry is
//     fsynced (queue.Enqueue and queue.RequestDelete return only then), and
//     carries X-Queue-Id, replays included.
//   - A body that fails validation gets 400 with every problem listed
//     ({"status":"ERROR","message":"<path>: <problem>","errors":[...]}) and
//     nothing is stored, whether the upstream answers or not: validation
//     is receipt's schema and the tax service's rules (Options.Rules). A
//     body is forwarded upstream byte for byte.
//   - The wait rule: a create (or a queued delete) waits up to Options.Wait,
//     or what the request asks with "Prefer: wait=N" (RFC 7240) capped at
//     Options.MaxWait, for the upstream's answer, and answers with the
//     upstream's own status code and body. Without an answer in time, when
//     the upstream is known down, once an attempt has failed, or when
//     as many entries as the worker has send slots are due before it (a
//     backlog is draining), it answers 202 {"queueId","state","message"}
//     at once. "Prefer: respond-async" means
//     no wait. An honoured preference is echoed in Preference-Applied.
//   - The lottery number, the QR data and request bodies are never logged;
//     customer identifiers are logged masked.
//
// # Queued answers
//
// A create or delete stored without the upstream's answer (none within the
// wait, the upstream down, a backlog ahead) is answered as
// Options.QueuedAnswer says: "202" gives 202 {"queueId","state","message"};
// "error" gives 503 with PosAPI's error envelope {"status":"ERROR","message"}
// and nothing else, the message naming the queueId and telling the cashier
// not to ring the sale again under a new number, plus Retry-After. In
// "error" mode receiptd never answers 202: whatever a POS that knows only
// PosAPI reads as "issued" is the upstream's own answer.
//
// # Replays
//
// A create whose idempotency key and body match an earlier one gets the
// earlier entry's queueId and the header Idempotent-Replayed: true; nothing
// is sent twice. What a POS that lost the first answer needs is the printable
// answer, so the replay answer is, in order:
//   - the upstream's answer verbatim (lottery and QR included) while the sync
//     worker still holds it in memory;
//   - for an entry still queued or being sent: the wait rule again, exactly as
//     for a first request (so 202, or 503 in "error" mode, while unsent);
//   - for a rejected entry: the upstream's refusal as kept, with its status code
//     ({"status":"ERROR","message",...});
//   - otherwise (sent or payment once the answer has left memory, held,
//     cancelled): 202 {"queueId","state","message","outcome"}; in "error"
//     mode 409 with PosAPI's error envelope (503 for held, which may still
//     be sent). The lottery number and QR data of a sent receipt cannot be
//     given again: the law forbids keeping them, so the message says so and
//     the POS must not print the receipt as a fresh one.
//
// # Late answer
//
// GET /receiptd/entries/{queueId}/answer gives the upstream's answer to an
// entry (a create's, lottery and QR included, or a delete's) once: 200 with
// the upstream's body verbatim and its status code in X-Upstream-Status; 202
// while the entry is unsent or being sent; 410 once given or no longer held;
// 404 for an unknown queueId. "Once" means: the answer reaches a POS once,
// by whichever way comes first: the answer to the request that waited for
// it, a replay, or this route. After that this route says 410. Replays of
// the same request (only the POS that made the sale can send it) get the
// answer again for the answer mailbox's ResultTTL (5 minutes) after it was
// first given, so a POS that lost an answer on the wire can still print.
// Answers live in memory only, never on disk or in a log, for
// accept.answer_ttl until first given, bounded in count and bytes (oldest
// first), and are lost on restart.
//
// # Security rules, in the order they are checked
//
//  1. Host: a loopback name (localhost, 127.0.0.0/8, [::1]) or one of
//     Options.AllowedHosts, else 403 (DNS rebinding). Requests arriving on a
//     Unix socket are exempt: no browser can reach one.
//  2. Browsers: Sec-Fetch-Site other than same-origin or none, or an Origin
//     whose host is not the request's Host, is 403.
//  3. With Options.Token set, every route but /healthz needs
//     "Authorization: Bearer <token>" (constant-time compare), else 401.
//     Options.MetricsToken opens GET /metrics and nothing else: any other
//     route presented with it is 401, with or without Options.Token; set,
//     /metrics needs one of the two tokens.
//  4. POST and DELETE need Content-Type application/json (parameters such as
//     charset allowed), else 415. A simple cross-site form cannot send it.
//  5. Bodies over Options.MaxBody are 413. Nesting depth is bounded by the
//     receipt parser; header size, read/write/idle timeouts and the number
//     of open connections (Options.MaxConns) by Serve.
package api
