// Package cache owns the lookup cache: every reference lookup of the tax
// service (district codes, product tax codes, merchant info per TIN, TIN by
// registration number, PosAPI info, bank accounts per TIN, the
// classification tree per path, excise-stamp goods per stamp QR id)
// answered from the local database, on the tax service's own routes; and
// the pass-throughs PosAPI's sendData and the operator's
// saveOprMerchants.
//
// # Promises
//
//   - Bodies are served byte-for-byte as the upstream gave them, with its
//     status and Content-Type, plus X-Cache (HIT, MISS or STALE) and Age
//     (whole seconds since the answer was fetched).
//   - An entry younger than its kind's refresh interval is a HIT. An older
//     one is served at once as STALE while one background refresh runs (Run
//     owns it). When the upstream fails, stale entries keep being served:
//     without limit by default, or up to Config.MaxStale past the interval.
//   - PosAPI's info and bank accounts (its live state) are never a HIT:
//     every request asks PosAPI (concurrent ones share one request), and
//     its answer is stored and served as a MISS. Only when PosAPI fails is
//     the stored copy served, as STALE, or the 503 below. For a minute
//     after a failed exchange PosAPI is not asked again by requests (they
//     get the stored copy at once) but probed by Run's refresh workers.
//   - Likewise, for a minute after a failed exchange with the public lookup
//     API (or a 2xx answer judged a failure), a miss of a lookup API kind
//     is the 503 below at once; stale entries are served and refreshed as
//     ever, and any success ends the minute. The two upstreams' minutes
//     are kept apart.
//   - A miss while the upstream fails (unreachable, 5xx, a non-JSON 2xx, a
//     2xx whose body reports a failure: see ErrFailedAnswer) is a 503 with
//     the envelope {"msg":"...","status":503,"data":null}. A failed
//     refresh never replaces a stored answer. A 4xx answer is passed
//     through and not cached.
//   - Negative answers (an unknown TIN: getInfo with data null; an unknown
//     regNo: getTinInfo with status 500 and data null) are cached for
//     Config.NegativeTTL. The district and product tax code lists and the
//     classification have no negative answer: without data they failed. A
//     regNo's "not found" never replaces its known TIN (the lookup API
//     fails with that same body).
//   - Concurrent misses of one key make one upstream request.
//   - At most Config.MaxEntries entries, evicting the least recently used,
//     plus the district and product tax code lists, which are never
//     evicted (one entry each; a till needs them offline).
//     Recency lives in memory only, so a hit never writes to disk; bodies
//     live in the store.BucketCache bucket (one nested bucket per kind) and
//     survive restarts. After a restart recency starts from fetch order.
//   - The stock QR lookup and saveOprMerchants carry the POS's own
//     Authorization and X-API-KEY upstream (in memory only, never stored);
//     a stock QR answer is cached per stamp id, whoever asked. Concurrent
//     fetches are shared only between callers with the same credentials.
//   - Warm before the first outage: Run keeps the warm set cached without
//     any POS asking (district and product tax codes, /rest/info, bank
//     accounts and merchant info of the TINs it lists and of those noted
//     on receipts, the classification's top two levels), and Warmth says
//     what of it is missing.
//   - A bad classification path (more than 6 segments, an empty or
//     whitespace-only one) is a 400 before anything is sent.
//
// A hit costs one map lookup under a mutex and one bbolt read transaction.
package cache
