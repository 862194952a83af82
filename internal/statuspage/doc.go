// Package statuspage owns the status page served at GET / for a person: a
// shop owner or an operator who wants to know, at a glance, whether the tax
// service is reachable, how many receipts wait, whether the oldest of them
// is getting too old, what failed last and how fresh the lookup cache is.
// What needs a person comes first, each item with its next steps in words
// and the exact command to run; errors are said in a person's words with
// the raw text behind a details element, and an error from before the
// tax service came back is dated and marked as past.
//
// It promises a page that is rendered on the server from one template
// embedded in the binary, with inline CSS, no JavaScript and no external
// asset (so it works offline, and a browser's console stays empty), that
// refreshes itself every few seconds, that escapes everything it shows
// (upstream messages are outside input), and that never signals a state by
// colour alone. It depends on nothing of receiptd's: the caller gathers a
// Data and this package only presents it.
package statuspage
