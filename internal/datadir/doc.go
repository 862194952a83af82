// Package datadir owns the changes of a stopped daemon's data directory
// as a whole, which the command line makes: `receiptd restore` (a backup
// or snapshot put back), `receiptd salvage` (a new database from what a
// damaged one and its write-ahead log still hold), `run -init` (a new,
// empty database), the copy `receiptd backup` writes, and the check that
// no receiptd runs on the directory.
//
// It promises that the database it puts in place was written and fsynced
// under a temporary name beside the one it replaces, opened and checked,
// its unfinished entries held, and given a new identity and marker; the
// file it replaces is kept under a dated name, never deleted; it refuses,
// changing nothing, while a receiptd holds the database or answers on the
// configured address; and a run cut short leaves a directory that refuses
// to start and can be run again.
//
// The names it reads, builds under and sets aside are internal/layout's
// (its doc draws the directory). Its tests run it in process on data
// directories the real store and queue made; cmd/receiptd's keep what
// needs the binary: exit codes, flags, the printed lines, a real process
// holding the database.
package datadir
