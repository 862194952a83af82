// Package update decides whether a release offered to this till may run
// here, before anything of it runs: the file must match the SHA-256 the
// offer names, carry a minisign signature by one of the till's own
// trusted keys (`update.trusted_keys`, from the till's file only), and
// that signature's trusted comment must be exactly
//
//	receiptd <version> <goos>/<goarch>
//
// naming the version offered and this till's platform. A version older
// than the running one is refused unless `update.allow_downgrade`; a file
// whose hash was rolled back on this till before is refused for good.
//
// Every refusal is a *RefusedError with a Reason, so the head office reads
// why (`INSTALL_FAILED` and the message) and a test can hold each check.
// Verification reads the file once, streaming: the SHA-256 and minisign's
// BLAKE2b prehash are taken together, and nothing of the file is executed
// or even kept open afterwards.
//
// Package release keeps the versions taken in the data directory and the
// update's state; package daemon's switch runs a release on probation and
// rolls it back; `receiptd update apply` takes one from a file, package
// control one the head office offers over OpAMP. Every one of them relies
// on this package: a file that fails Check never runs.
package update
